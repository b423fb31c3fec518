//! Names and process groups: unique, typed, released on death.

mod common;

use common::{log, Probe};
use troupe::{Actor, Ctx, RegistryError};

#[tokio::test]
async fn a_taken_name_is_an_error_naming_the_holder() {
    let lg = log();
    let a = troupe::spawn(Probe::new("a", &lg));
    let b = troupe::spawn(Probe::new("b", &lg));
    troupe::register("reg-taken", &a).unwrap();
    let err = troupe::register("reg-taken", &b).unwrap_err();
    assert_eq!(err, RegistryError::NameTaken { name: "reg-taken".into(), holder: a.id() });
    assert!(err.to_string().contains(&a.id().to_string()));
}

#[tokio::test]
async fn names_are_released_when_the_holder_dies() {
    let lg = log();
    let a = troupe::spawn(Probe::new("a", &lg));
    troupe::register("reg-release", &a).unwrap();
    assert_eq!(troupe::whereis::<common::Cmd>("reg-release").unwrap().id(), a.id());
    a.kill();
    a.terminated().await;
    assert_eq!(
        troupe::whereis::<common::Cmd>("reg-release").unwrap_err(),
        RegistryError::NotRegistered("reg-release".into())
    );
    let b = troupe::spawn(Probe::new("b", &lg));
    troupe::register("reg-release", &b).unwrap();
}

#[tokio::test]
async fn unregister_frees_the_name() {
    let lg = log();
    let a = troupe::spawn(Probe::new("a", &lg));
    troupe::register("reg-unreg", &a).unwrap();
    assert!(troupe::unregister("reg-unreg"));
    assert!(!troupe::unregister("reg-unreg"));
    assert!(troupe::whereis_any("reg-unreg").is_none());
}

struct Other;
impl Actor for Other {
    type Msg = u32;
    async fn handle(&mut self, _: u32, _: &mut Ctx<Self>) {}
}

#[tokio::test]
async fn lookups_are_typed() {
    let o = troupe::spawn(Other);
    troupe::register("reg-typed", &o).unwrap();
    assert!(matches!(troupe::whereis::<common::Cmd>("reg-typed"), Err(RegistryError::WrongType { .. })));
    assert!(troupe::whereis::<u32>("reg-typed").is_ok());
}

#[tokio::test]
async fn a_dead_actor_cannot_register() {
    let o = troupe::spawn(Other);
    o.kill();
    o.terminated().await;
    assert_eq!(troupe::register("reg-dead", &o), Err(RegistryError::NotAlive(o.id())));
}

#[tokio::test]
async fn groups_track_live_members() {
    let lg = log();
    let a = troupe::spawn(Probe::new("a", &lg));
    let b = troupe::spawn(Probe::new("b", &lg));
    troupe::join_group("grp", &a).unwrap();
    troupe::join_group("grp", &b).unwrap();
    troupe::join_group("grp", &b).unwrap();
    let ids: Vec<_> = troupe::group_members::<common::Cmd>("grp").iter().map(|r| r.id()).collect();
    assert_eq!(ids, vec![a.id(), b.id()]);
    a.kill();
    a.terminated().await;
    let ids: Vec<_> = troupe::group_members::<common::Cmd>("grp").iter().map(|r| r.id()).collect();
    assert_eq!(ids, vec![b.id()]);
    troupe::leave_group("grp", b.id());
    assert!(troupe::group_members::<common::Cmd>("grp").is_empty());
}

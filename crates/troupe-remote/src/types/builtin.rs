//! The std types that are remote messages and fields out of the box: numbers, `bool`,
//! `char`, `String`, `()`, `Vec<u8>` and `Bytes` (both `troupe.bytes`, the same bytes on the
//! wire), `Option`, `Vec`, `Result`, tuples up to 4, and `ActorRef` itself (a ref as a reply);
//! and the [`RemoteField`] impls the derive relies on.
//!
//! Rules:
//! 1. The tags of the types that had one before the derive are unchanged (`troupe.unit`,
//!    `troupe.u64`, `troupe.string`, `troupe.bytes`, ...).
//! 2. `Vec<T>` is `troupe.vec<T's tag>`, except `Vec<u8>`, which keeps `troupe.bytes`
//!    (one blanket impl, the byte vector special-cased by its element's tag).
//! 3. A container registers what it holds: `Option<ActorRef<M>>` as a reply registers `M`.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::hash::Hash;

use troupe::{ActorRef, ReplyTo};

use super::{Nested, RemoteField, RemoteMessage};

macro_rules! plain {
    ($($t:ty => $tag:literal),* $(,)?) => {
        $(
            impl RemoteMessage for $t { const TAG: &'static str = $tag; }
            impl RemoteField for $t {}
        )*
    };
}

plain! {
    () => "troupe.unit", bool => "troupe.bool", char => "troupe.char",
    u8 => "troupe.u8", u16 => "troupe.u16", u32 => "troupe.u32", u64 => "troupe.u64",
    u128 => "troupe.u128", usize => "troupe.usize",
    i8 => "troupe.i8", i16 => "troupe.i16", i32 => "troupe.i32", i64 => "troupe.i64",
    i128 => "troupe.i128", isize => "troupe.isize",
    f32 => "troupe.f32", f64 => "troupe.f64", String => "troupe.string",
    bytes::Bytes => "troupe.bytes", crate::Blob => "troupe.blob",
}

macro_rules! plain_field {
    ($($t:ty),* $(,)?) => { $(impl RemoteField for $t {})* };
}

plain_field!(std::time::Duration, std::time::SystemTime, crate::SharedBlob, troupe::ExitReason);

impl<T: ?Sized> RemoteField for std::marker::PhantomData<T> {}

/// Rule 2.
impl<T: RemoteMessage> RemoteMessage for Vec<T> {
    const TAG: &'static str = "troupe.vec";
    fn tag() -> Cow<'static, str> {
        let t = T::tag();
        if t == u8::TAG {
            Cow::Borrowed("troupe.bytes")
        } else {
            Cow::Owned(format!("troupe.vec<{t}>"))
        }
    }
    fn nested(n: &mut Nested) {
        n.add::<T>();
    }
}

impl<T: RemoteMessage> RemoteMessage for Option<T> {
    const TAG: &'static str = "troupe.option";
    fn tag() -> Cow<'static, str> {
        Cow::Owned(format!("troupe.option<{}>", T::tag()))
    }
    fn nested(n: &mut Nested) {
        n.add::<T>();
    }
}

impl<T: RemoteMessage, E: RemoteMessage> RemoteMessage for Result<T, E> {
    const TAG: &'static str = "troupe.result";
    fn tag() -> Cow<'static, str> {
        Cow::Owned(format!("troupe.result<{},{}>", T::tag(), E::tag()))
    }
    fn nested(n: &mut Nested) {
        n.add::<T>();
        n.add::<E>();
    }
}

/// A ref as a reply or a message of its own: `troupe.ref<M's tag>`.
impl<M: RemoteMessage> RemoteMessage for ActorRef<M> {
    const TAG: &'static str = "troupe.ref";
    fn tag() -> Cow<'static, str> {
        Cow::Owned(format!("troupe.ref<{}>", M::tag()))
    }
    fn nested(n: &mut Nested) {
        n.add::<M>();
    }
}

macro_rules! tuples {
    ($(($($t:ident),+)),* $(,)?) => {
        $(
            impl<$($t: RemoteMessage),+> RemoteMessage for ($($t,)+) {
                const TAG: &'static str = "troupe.tuple";
                fn tag() -> Cow<'static, str> {
                    let parts: Vec<Cow<'static, str>> = vec![$($t::tag()),+];
                    Cow::Owned(format!("troupe.tuple<{}>", parts.join(",")))
                }
                fn nested(n: &mut Nested) {
                    $(n.add::<$t>();)+
                }
            }
            impl<$($t: RemoteField),+> RemoteField for ($($t,)+) {
                fn register_carried(n: &mut Nested) {
                    $($t::register_carried(n);)+
                }
            }
        )*
    };
}

tuples!((A), (A, B), (A, B, C), (A, B, C, D));

impl<M: RemoteMessage> RemoteField for ActorRef<M> {
    fn register_carried(n: &mut Nested) {
        n.add::<M>();
    }
}

impl<R: RemoteMessage> RemoteField for ReplyTo<R> {
    fn register_carried(n: &mut Nested) {
        n.add::<R>();
    }
}

macro_rules! containers {
    ($($c:ident<$($p:ident $(: $b:path)?),+>),* $(,)?) => {
        $(
            impl<$($p: RemoteField $(+ $b)?),+> RemoteField for $c<$($p),+> {
                fn register_carried(n: &mut Nested) {
                    $($p::register_carried(n);)+
                }
            }
        )*
    };
}

containers!(
    Option<T>, Vec<T>, Box<T>, VecDeque<T>, Result<T, E>, HashMap<K: Hash, V>, BTreeMap<K: Ord, V>,
    HashSet<T: Hash>, BTreeSet<T: Ord>,
);

impl<T: RemoteField, const N: usize> RemoteField for [T; N] {
    fn register_carried(n: &mut Nested) {
        T::register_carried(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::tag_of;

    #[test]
    fn rule_1_existing_tags_are_unchanged() {
        for (tag, want) in [
            (tag_of::<()>(), "troupe.unit"),
            (tag_of::<u64>(), "troupe.u64"),
            (tag_of::<String>(), "troupe.string"),
            (tag_of::<crate::Blob>(), "troupe.blob"),
        ] {
            assert_eq!(tag, want);
        }
    }

    #[test]
    fn rule_2_vec_u8_keeps_the_bytes_tag_and_other_vecs_name_their_element() {
        assert_eq!(tag_of::<Vec<u8>>(), "troupe.bytes");
        assert_eq!(tag_of::<bytes::Bytes>(), "troupe.bytes");
        assert_eq!(tag_of::<Vec<u16>>(), "troupe.vec<troupe.u16>");
        assert_eq!(tag_of::<Vec<Vec<u8>>>(), "troupe.vec<troupe.bytes>");
    }

    #[test]
    fn rule_3_a_container_registers_what_it_holds() {
        #[derive(serde::Serialize, serde::Deserialize)]
        struct Inner;
        impl RemoteMessage for Inner {
            const TAG: &'static str = "test.builtin.inner.v1";
        }
        assert!(crate::types::entry(std::any::TypeId::of::<Inner>()).is_err());
        tag_of::<Option<(u8, ActorRef<Inner>)>>();
        assert!(crate::types::entry(std::any::TypeId::of::<Inner>()).is_ok());
    }
}

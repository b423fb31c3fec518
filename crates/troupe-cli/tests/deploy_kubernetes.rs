//! `deploy/kubernetes/` and `deploy/Dockerfile` checked offline: every YAML document parses,
//! and the pieces agree with each other and with the code that reads them. The headless
//! Service is the StatefulSet's `serviceName`; one port everywhere (Service, container,
//! `listen`, `TROUPE_ADVERTISE`, `seed_dns`); selectors match the pod labels; the ConfigMap's
//! `node.toml` is a valid `troupe_remote::NodeConfig` once the pod's environment (expanded as
//! Kubernetes expands `$(VAR)`) is applied with `NodeConfig::apply_env_with`, and its
//! `[cluster]` table a valid `troupe_cluster::ClusterConfig` whose `seed_dns` is the
//! Service's DNS name and whose first seed is pod 0's advertised name; the `TROUPE_*` variables set are ones `NodeConfig` reads; the Secret's
//! key is the one mounted; the Dockerfile's entrypoint reads the mounted file as a non-root
//! user. When `kubectl` is installed, `kubectl kustomize` must render the kustomization and
//! kubectl must decode every rendered object and the example Secret into its built-in API type
//! (`kubectl set env --local`: a wrong value type, an unknown kind or apiVersion fails); neither
//! needs a cluster. Without kubectl these checks print SKIPPED, and fail instead when
//! `TROUPE_TEST_REQUIRE_KUBECTL=1` (scripts/test.sh sets it). `kubectl apply --dry-run=client`
//! cannot run offline even with `--validate=false` (it asks an API server's discovery for every
//! kind's resource), so it runs only when `TROUPE_KUBECTL_DRY_RUN=1` says a cluster is configured.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_norway::Value;
use troupe_cluster::{ClusterConfig, Downing};
use troupe_remote::NodeConfig;

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

/// One YAML document and the file it came from.
struct Doc {
    file: String,
    v: Value,
}

fn parse_docs(text: &str, file: &str) -> Vec<Doc> {
    let mut out = Vec::new();
    for d in serde_norway::Deserializer::from_str(text) {
        let v = Value::deserialize(d).unwrap_or_else(|e| panic!("{file}: not YAML: {e}"));
        if !v.is_null() {
            out.push(Doc { file: file.to_owned(), v });
        }
    }
    out
}

/// Every document of every `*.yaml` file in deploy/kubernetes/.
fn load() -> Vec<Doc> {
    let dir = deploy_dir().join("kubernetes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    let mut docs = Vec::new();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        docs.extend(parse_docs(&std::fs::read_to_string(&f).unwrap(), &name));
    }
    for d in &docs {
        for key in ["apiVersion", "kind"] {
            assert!(d.v.get(key).and_then(Value::as_str).is_some(), "{}: a document without {key}", d.file);
        }
        if kind(d) != "Kustomization" {
            assert!(d.v.get("metadata").and_then(|m| m.get("name")).is_some(), "{}: no metadata.name", d.file);
        }
    }
    docs
}

fn kind(d: &Doc) -> &str {
    d.v["kind"].as_str().unwrap()
}

/// The one document of `k`.
fn one<'a>(docs: &'a [Doc], k: &str) -> &'a Doc {
    let found: Vec<&Doc> = docs.iter().filter(|d| kind(d) == k).collect();
    assert_eq!(found.len(), 1, "expected exactly one {k}, found {}", found.len());
    found[0]
}

/// The value at a dotted path (`spec.template.spec`); panics naming the path and file.
fn at<'a>(d: &'a Doc, path: &str) -> &'a Value {
    let mut v = &d.v;
    for k in path.split('.') {
        v = v.get(k).unwrap_or_else(|| panic!("{}: {} has no {path}", d.file, kind(d)));
    }
    v
}

fn s<'a>(d: &'a Doc, path: &str) -> &'a str {
    at(d, path).as_str().unwrap_or_else(|| panic!("{}: {path} is not a string", d.file))
}

fn name(d: &Doc) -> &str {
    s(d, "metadata.name")
}

fn labels(v: &Value) -> BTreeMap<String, String> {
    v.as_mapping()
        .map(|m| {
            m.iter().map(|(k, v)| (k.as_str().unwrap().to_owned(), v.as_str().unwrap_or_default().to_owned())).collect()
        })
        .unwrap_or_default()
}

/// `sel` is non-empty and every one of its labels is on the pod.
fn selects(sel: &BTreeMap<String, String>, pod: &BTreeMap<String, String>, what: &str) {
    assert!(!sel.is_empty(), "{what}: an empty selector");
    for (k, v) in sel {
        assert_eq!(pod.get(k), Some(v), "{what}: selects {k}={v}, which the pod template lacks");
    }
}

/// A port reference (name or number) resolved against the container's named ports.
fn port_of(v: &Value, named: &BTreeMap<String, u64>, what: &str) -> u64 {
    match v {
        Value::Number(n) => n.as_u64().unwrap(),
        Value::String(s) => *named.get(s).unwrap_or_else(|| panic!("{what}: no container port named {s}")),
        other => panic!("{what}: not a port: {other:?}"),
    }
}

fn host_port(addr: &str) -> (&str, u64) {
    let (h, p) = addr.rsplit_once(':').unwrap_or_else(|| panic!("{addr:?} is not host:port"));
    (h, p.parse().unwrap_or_else(|_| panic!("{addr:?}: bad port")))
}

/// The container's environment as Kubernetes builds it for pod `pod` in namespace `ns`:
/// fieldRefs to the pod's name and namespace, literal values with `$(VAR)` expanded from the
/// variables defined before them. Secret references are kept as `secret:NAME/KEY`.
fn expand_env(c: &Value, pod: &str, ns: &str) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    for e in c["env"].as_sequence().expect("the container has an env list") {
        let n = e["name"].as_str().unwrap().to_owned();
        let v = if let Some(val) = e.get("value") {
            let mut out = val.as_str().unwrap().to_owned();
            for (k, v) in &env {
                out = out.replace(&format!("$({k})"), v);
            }
            assert!(!out.contains("$("), "env {n}: {out:?} refers to a variable not defined before it");
            out
        } else if let Some(f) = e.get("valueFrom").and_then(|f| f.get("fieldRef")) {
            match f["fieldPath"].as_str().unwrap() {
                "metadata.name" => pod.to_owned(),
                "metadata.namespace" => ns.to_owned(),
                other => panic!("env {n}: fieldRef {other} not modelled by this test"),
            }
        } else if let Some(r) = e.get("valueFrom").and_then(|f| f.get("secretKeyRef")) {
            format!("secret:{}/{}", r["name"].as_str().unwrap(), r["key"].as_str().unwrap())
        } else {
            panic!("env {n}: neither value, fieldRef nor secretKeyRef");
        };
        env.insert(n, v);
    }
    env
}

/// Where a mounted volume puts a ConfigMap/Secret key: (mount path / item path, volume).
fn mounted_files(c: &Value, volumes: &[Value]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for m in c["volumeMounts"].as_sequence().map(Vec::as_slice).unwrap_or_default() {
        let vol = volumes
            .iter()
            .find(|v| v["name"] == m["name"])
            .unwrap_or_else(|| panic!("volumeMount {:?} names no volume", m["name"]));
        let src = vol.get("configMap").or_else(|| vol.get("secret"));
        let Some(items) = src.and_then(|s| s.get("items")).and_then(Value::as_sequence) else { continue };
        for i in items {
            let file =
                format!("{}/{}", m["mountPath"].as_str().unwrap().trim_end_matches('/'), i["path"].as_str().unwrap());
            out.push((file, vol.clone()));
        }
    }
    out
}

/// The Dockerfile's `ENTRYPOINT [...]` (JSON form), `USER` and `EXPOSE` of its last stage.
fn dockerfile() -> (Vec<String>, String, Vec<u64>) {
    let text = std::fs::read_to_string(deploy_dir().join("Dockerfile")).unwrap();
    let last = text.rsplit_once("\nFROM ").map(|(_, s)| s).expect("a multi-stage Dockerfile");
    let mut entry = Vec::new();
    let mut user = String::new();
    let mut expose = Vec::new();
    for line in last.lines() {
        if let Some(j) = line.strip_prefix("ENTRYPOINT ") {
            entry = serde_json::from_str(j).expect("ENTRYPOINT in JSON (exec) form");
        } else if let Some(u) = line.strip_prefix("USER ") {
            user = u.trim().to_owned();
        } else if let Some(p) = line.strip_prefix("EXPOSE ") {
            expose.extend(p.split_whitespace().map(|p| p.trim_end_matches("/tcp").parse::<u64>().unwrap()));
        }
    }
    (entry, user, expose)
}

#[test]
fn the_manifests_agree_with_each_other_and_with_the_node_configuration() {
    let docs = load();
    let kust = one(&docs, "Kustomization");
    let ns = kust.v.get("namespace").and_then(Value::as_str).unwrap_or("default").to_owned();
    let svc = one(&docs, "Service");
    let sts = one(&docs, "StatefulSet");
    let cm = one(&docs, "ConfigMap");
    let secret = one(&docs, "Secret");
    let pdb = one(&docs, "PodDisruptionBudget");

    // The kustomization lists every manifest but the example Secret (created by hand).
    let listed: Vec<&str> = at(kust, "resources").as_sequence().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    for d in &docs {
        let expected = !matches!(d.file.as_str(), "kustomization.yaml" | "secret.example.yaml");
        assert_eq!(listed.contains(&d.file.as_str()), expected, "{}: listed in kustomization.yaml?", d.file);
    }

    // The headless Service.
    assert_eq!(s(svc, "spec.clusterIP"), "None", "the Service must be headless");
    assert_eq!(at(svc, "spec.publishNotReadyAddresses").as_bool(), Some(true));
    let svc_ports = at(svc, "spec.ports").as_sequence().unwrap();
    assert_eq!(svc_ports.len(), 1);
    let port = svc_ports[0]["port"].as_u64().unwrap();
    assert_eq!(svc_ports[0]["name"].as_str(), Some("troupe"));

    // The StatefulSet and its pods.
    assert_eq!(s(sts, "spec.serviceName"), name(svc), "serviceName must name the headless Service");
    assert_eq!(at(sts, "spec.replicas").as_u64(), Some(3));
    assert_eq!(s(sts, "spec.podManagementPolicy"), "Parallel");
    let pod_labels = labels(at(sts, "spec.template.metadata.labels"));
    selects(&labels(at(sts, "spec.selector.matchLabels")), &pod_labels, "StatefulSet selector");
    selects(&labels(at(svc, "spec.selector")), &pod_labels, "Service selector");
    selects(&labels(at(pdb, "spec.selector.matchLabels")), &pod_labels, "PodDisruptionBudget selector");
    let replicas = at(sts, "spec.replicas").as_u64().unwrap();
    let min = at(pdb, "spec.minAvailable").as_u64().expect("minAvailable as a count");
    assert!(
        min > replicas / 2 && min < replicas,
        "minAvailable {min}: a majority of {replicas}, leaving room to drain"
    );
    assert!(at(sts, "spec.template.spec.terminationGracePeriodSeconds").as_u64().is_some());
    let containers = at(sts, "spec.template.spec.containers").as_sequence().unwrap();
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    assert_eq!(c["image"].as_str(), Some("troupe:latest"));
    let named: BTreeMap<String, u64> = c["ports"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap().to_owned(), p["containerPort"].as_u64().unwrap()))
        .collect();
    assert_eq!(named.get("troupe"), Some(&port), "containerPort `troupe` must be the Service's port");
    assert_eq!(port_of(&svc_ports[0]["targetPort"], &named, "Service targetPort"), port);
    // The probes and the scrape go to the [observe] endpoint (checked against node.toml below).
    let observe_port = *named.get("observe").expect("a containerPort named `observe`");
    for (probe, path) in [("readinessProbe", "/health/ready"), ("livenessProbe", "/health/live")] {
        let p = c.get(probe).unwrap_or_else(|| panic!("no {probe}"));
        let h = p.get("httpGet").unwrap_or_else(|| panic!("{probe} is not an httpGet"));
        assert_eq!(h["path"].as_str(), Some(path), "{probe}");
        assert_eq!(port_of(&h["port"], &named, probe), observe_port, "{probe}");
    }
    let notes = at(sts, "spec.template.metadata.annotations");
    assert_eq!(notes["prometheus.io/scrape"].as_str(), Some("true"));
    assert_eq!(notes["prometheus.io/port"].as_str(), Some(observe_port.to_string().as_str()));
    assert_eq!(notes["prometheus.io/path"].as_str(), Some("/metrics"));
    for k in ["requests", "limits"] {
        let r = &c["resources"][k];
        assert!(r.get("cpu").is_some() && r.get("memory").is_some(), "resources.{k} needs cpu and memory");
    }

    // The environment of pod 0: only variables NodeConfig (or the log filter) reads.
    let pod0 = format!("{}-0", name(sts));
    let env = expand_env(c, &pod0, &ns);
    for k in env.keys().filter(|k| k.starts_with("TROUPE_")) {
        assert!(
            troupe_remote::ENV_VARS.contains(&k.as_str()) || k == "TROUPE_LOG",
            "{k} is not read by troupe_remote::NodeConfig ({:?})",
            troupe_remote::ENV_VARS
        );
    }
    let dns = format!("{}.{ns}.svc.cluster.local", name(svc));
    assert_eq!(env.get(troupe_remote::ENV_NODE_NAME), Some(&pod0));
    assert_eq!(env.get(troupe_remote::ENV_ADVERTISE), Some(&format!("{pod0}.{dns}:{port}")));

    // The secret: a file from the Secret's key, or a secretKeyRef to it.
    let secret_value = secret
        .v
        .get("stringData")
        .and_then(|d| d.get("secret"))
        .and_then(Value::as_str)
        .expect("the example Secret has stringData.secret")
        .to_owned();
    let volumes = at(sts, "spec.template.spec.volumes").as_sequence().unwrap().clone();
    let files = mounted_files(c, &volumes);
    let mut env_for_node = env.clone();
    let tmp = tempfile::tempdir().unwrap();
    match (env.get(troupe_remote::ENV_SECRET_FILE), env.get(troupe_remote::ENV_SECRET)) {
        (Some(path), None) => {
            let (_, vol) = files.iter().find(|(f, _)| f == path).unwrap_or_else(|| panic!("{path} is not mounted"));
            assert_eq!(vol["secret"]["secretName"].as_str(), Some(name(secret)), "{path} comes from another Secret");
            let file_name = path.rsplit('/').next().unwrap();
            let items = vol["secret"]["items"].as_sequence().unwrap();
            let item = items.iter().find(|i| i["path"].as_str() == Some(file_name)).unwrap();
            assert_eq!(item["key"].as_str(), Some("secret"), "{path}: not the Secret's key `secret`");
            let file = tmp.path().join("secret");
            std::fs::write(&file, &secret_value).unwrap();
            env_for_node.insert(troupe_remote::ENV_SECRET_FILE.into(), file.display().to_string());
        }
        (None, Some(r)) => {
            assert_eq!(r, &format!("secret:{}/secret", name(secret)));
            env_for_node.insert(troupe_remote::ENV_SECRET.into(), secret_value.clone());
        }
        other => panic!("the pod needs exactly one of TROUPE_SECRET_FILE and TROUPE_SECRET: {other:?}"),
    }

    // node.toml: mounted where the image's entrypoint reads it, and a valid NodeConfig.
    let (entry, user, expose) = dockerfile();
    let at_config = entry.iter().position(|a| a == "--config").expect("the entrypoint passes --config");
    assert_eq!(&entry[..2], ["troupe", "node"]);
    let config_path = &entry[at_config + 1];
    let (_, vol) = files
        .iter()
        .find(|(f, _)| f == config_path)
        .unwrap_or_else(|| panic!("{config_path} (the Dockerfile's --config) is not mounted"));
    assert_eq!(vol["configMap"]["name"].as_str(), Some(name(cm)));
    let config_name = config_path.rsplit('/').next().unwrap();
    let items = vol["configMap"]["items"].as_sequence().unwrap();
    let key = items.iter().find(|i| i["path"].as_str() == Some(config_name)).unwrap()["key"].as_str().unwrap();
    let text = at(cm, "data").get(key).and_then(Value::as_str).unwrap_or_else(|| panic!("the ConfigMap has no {key}"));
    let mut cfg: NodeConfig = toml::from_str(text).unwrap_or_else(|e| panic!("node.toml: {e}"));
    cfg.apply_env_with(|k| env_for_node.get(k).cloned()).unwrap();
    cfg.validate().unwrap_or_else(|e| panic!("node.toml with pod 0's environment: {e}"));
    assert_eq!(cfg.name, pod0);
    assert_eq!(cfg.secret, secret_value);
    assert_eq!(cfg.advertise, Some(format!("{pod0}.{dns}:{port}")));
    assert_eq!(host_port(&cfg.listen), ("0.0.0.0", port), "listen on every interface, on the Service's port");

    // Its [cluster] table: valid, seeded through the headless Service, keep-majority.
    let table = cfg.cluster.as_ref().expect("node.toml has a [cluster] section");
    let cluster = ClusterConfig::from_table(table).unwrap_or_else(|e| panic!("node.toml [cluster]: {e}"));
    assert_eq!(cluster.seed_dns, Some(format!("{dns}:{port}")), "seed_dns must name the headless Service");
    assert_eq!(cluster.downing, Downing::KeepMajority);
    // Pod 0 is the first seed (by the name it advertises), so a fresh deployment has a node
    // that starts the cluster when no other answers; the others join through seed_dns.
    assert_eq!(cluster.seeds.first(), cfg.advertise.as_ref(), "the first seed must be pod 0's advertised address");

    // Its [observe] table: valid, on every interface, on the probes' port.
    let observe = cfg.observe.as_ref().expect("node.toml has an [observe] section");
    let listen = troupe_cluster::observe::listen_of(observe).unwrap_or_else(|e| panic!("node.toml {e}"));
    assert_eq!(host_port(&listen), ("0.0.0.0", observe_port), "[observe] listen vs the probes' port");

    // The image: non-root, the same user the pod asks for, the port exposed.
    let uid = user.split(':').next().unwrap();
    assert!(!user.is_empty() && uid != "0" && uid != "root", "the image runs as root");
    let run_as = at(sts, "spec.template.spec.securityContext.runAsUser").as_u64().unwrap();
    assert_eq!(uid.parse::<u64>().ok(), Some(run_as), "USER {user} vs runAsUser {run_as}");
    assert!(expose.contains(&port) && expose.contains(&observe_port), "EXPOSE {expose:?}");
}

#[test]
fn kubectl_renders_the_kustomization_when_installed() {
    let dir = deploy_dir().join("kubernetes");
    let have =
        std::process::Command::new("kubectl").args(["version", "--client"]).output().is_ok_and(|o| o.status.success());
    if !have {
        assert!(
            std::env::var("TROUPE_TEST_REQUIRE_KUBECTL").as_deref() != Ok("1"),
            "TROUPE_TEST_REQUIRE_KUBECTL=1 but kubectl is not installed (bash scripts/install-kubectl.sh)"
        );
        println!("SKIPPED: kubectl not installed: the kubectl checks did not run (the YAML checks ran)");
        return;
    }
    // kubectl kustomize needs no cluster: it renders what `kubectl apply -k` would send.
    let out = std::process::Command::new("kubectl").arg("kustomize").arg(&dir).output().unwrap();
    assert!(out.status.success(), "kubectl kustomize failed: {}", String::from_utf8_lossy(&out.stderr));
    let rendered_text = String::from_utf8(out.stdout).unwrap();
    let rendered = parse_docs(&rendered_text, "kubectl kustomize");
    let mut kinds: Vec<&str> = rendered.iter().map(kind).collect();
    kinds.sort_unstable();
    assert_eq!(kinds, ["ConfigMap", "PodDisruptionBudget", "Service", "StatefulSet"]);
    let src = load();
    let ns = one(&src, "Kustomization").v.get("namespace").and_then(Value::as_str).unwrap_or("default").to_owned();
    for d in &rendered {
        assert_eq!(s(d, "metadata.namespace"), ns, "{} rendered outside the namespace seed_dns names", kind(d));
    }
    let f = dir.join("secret.example.yaml");
    kubectl_decodes(&rendered_text, &rendered, &f);
    if std::env::var("TROUPE_KUBECTL_DRY_RUN").as_deref() != Ok("1") {
        println!(
            "kubectl apply --dry-run=client not run: it needs an API server for discovery \
             (set TROUPE_KUBECTL_DRY_RUN=1 with a cluster configured to run it); the offline \
             render and decode above ran"
        );
        return;
    }
    let out = std::process::Command::new("kubectl").args(["apply", "--dry-run=client", "-f"]).arg(&f).output().unwrap();
    assert!(out.status.success(), "{}: {}", f.display(), String::from_utf8_lossy(&out.stderr));
    let out =
        std::process::Command::new("kubectl").args(["apply", "--dry-run=client", "-k"]).arg(&dir).output().unwrap();
    assert!(out.status.success(), "kubectl apply --dry-run=client -k: {}", String::from_utf8_lossy(&out.stderr));
}

/// kubectl decodes each rendered object and the example Secret into its built-in API type, with
/// no cluster: `kubectl set env --local` decodes every object with kubectl's scheme (a wrong
/// value type such as `replicas: three`, an unknown kind or apiVersion fails here), then sets a
/// variable on the pod templates (printed by `-o name`) and refuses every other kind naming the
/// Go type it decoded to.
fn kubectl_decodes(rendered_text: &str, rendered: &[Doc], secret: &Path) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("rendered.yaml");
    std::fs::write(&file, rendered_text).unwrap();
    let out = std::process::Command::new("kubectl")
        .args(["set", "env", "--local", "--dry-run=client", "-o", "name", "-f"])
        .arg(&file)
        .arg("-f")
        .arg(secret)
        .arg("TROUPE_KUBECTL_PROBE=1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let secret_docs = parse_docs(&std::fs::read_to_string(secret).unwrap(), "secret.example.yaml");
    for d in rendered.iter().chain(&secret_docs) {
        let version = s(d, "apiVersion").rsplit('/').next().unwrap();
        let printed = stdout.lines().any(|l| {
            l.split_once('/').is_some_and(|(res, n)| n == name(d) && res.starts_with(&kind(d).to_lowercase()))
        });
        let decoded = stderr.contains(&format!("not a pod or does not have a pod template: *{version}.{}", kind(d)));
        assert!(
            printed || decoded,
            "{} {}: kubectl did not decode it into its API type (exit {:?}):\n{stderr}",
            kind(d),
            name(d),
            out.status.code()
        );
    }
}

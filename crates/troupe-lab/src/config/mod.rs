//! Workload configuration: a typed key schema per workload, embedded defaults, a TOML file and
//! `--set key=value` overrides, validated all at once (workloads.md "Conventions").
//!
//! Rules:
//! 1. Every key has a kind (integer, number, boolean, choice), an allowed range and a default.
//! 2. Values are applied in order: defaults, then the TOML file, then each `--set`.
//! 3. Every problem is collected (unknown keys, wrong types, out of range, cross-key rules)
//!    and reported together, naming key, value and what is allowed; nothing starts on error.
//! 4. A resolved config is a flat JSON object (keys sorted): what a child gets in
//!    `TROUPE_CONFIG` and what the manifest records. The one exception is the optional
//!    `[net_faults]` section every workload takes ([`crate::netfaults`]): set with a TOML table
//!    or `--set net_faults.KEY=VALUE`, recorded as a `net_faults` object, absent when not given.

pub mod keys;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::error::{ConfigIssue, Error, ErrorKind, Result};
pub mod net_faults;

use net_faults::NetFaults;

pub use keys::cross;

/// A configuration value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// An integer.
    Int(i64),
    /// A number (integers are accepted where a number is wanted).
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// One of a fixed set of words.
    Str(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Str(s) => write!(f, "{s:?}"),
        }
    }
}

impl Value {
    fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Int(i) => (*i).into(),
            Value::Float(x) => {
                serde_json::Number::from_f64(*x).map(serde_json::Value::Number).unwrap_or(serde_json::Value::Null)
            }
            Value::Bool(b) => (*b).into(),
            Value::Str(s) => s.clone().into(),
        }
    }
}

/// The kind and allowed range of a key.
#[derive(Debug, Clone, Copy)]
pub enum KeyKind {
    /// An integer in `min..=max`.
    Int {
        /// Smallest allowed value.
        min: i64,
        /// Largest allowed value.
        max: i64,
    },
    /// A number in `min..=max`.
    Float {
        /// Smallest allowed value.
        min: f64,
        /// Largest allowed value.
        max: f64,
    },
    /// `true` or `false`.
    Bool,
    /// One of the listed words.
    Choice(&'static [&'static str]),
    /// Free text (a URL, a path); the workload's cross-key rules check its shape.
    Text,
}

impl KeyKind {
    /// What values the key allows, in words (`an integer in 1..=100`).
    pub fn allowed(&self) -> String {
        match self {
            KeyKind::Int { min, max } => format!("an integer in {min}..={max}"),
            KeyKind::Float { min, max } => format!("a number in {min}..={max}"),
            KeyKind::Bool => "true or false".into(),
            KeyKind::Choice(words) => format!("one of {}", words.join(", ")),
            KeyKind::Text => "a string".into(),
        }
    }

    /// Checks a typed value against the kind, converting integers to numbers where wanted.
    fn check(&self, v: Value) -> std::result::Result<Value, String> {
        match (self, v) {
            (KeyKind::Int { min, max }, Value::Int(i)) => {
                if i < *min || i > *max {
                    Err(format!("out of range; allowed: {}", self.allowed()))
                } else {
                    Ok(Value::Int(i))
                }
            }
            (KeyKind::Float { min, max }, Value::Int(i)) => {
                KeyKind::Float { min: *min, max: *max }.check(Value::Float(i as f64))
            }
            (KeyKind::Float { min, max }, Value::Float(x)) => {
                if !x.is_finite() || x < *min || x > *max {
                    Err(format!("out of range; allowed: {}", self.allowed()))
                } else {
                    Ok(Value::Float(x))
                }
            }
            (KeyKind::Bool, Value::Bool(b)) => Ok(Value::Bool(b)),
            (KeyKind::Choice(words), Value::Str(s)) => {
                if words.contains(&s.as_str()) {
                    Ok(Value::Str(s))
                } else {
                    Err(format!("not allowed{}; allowed: {}", crate::did_you_mean(&s, words), self.allowed()))
                }
            }
            (KeyKind::Text, Value::Str(s)) => Ok(Value::Str(s)),
            _ => Err(format!("wrong type; expected {}", self.allowed())),
        }
    }

    /// Parses the text of a `--set` value by kind.
    fn parse(&self, text: &str) -> std::result::Result<Value, String> {
        let t = text.trim();
        let v = match self {
            KeyKind::Int { .. } => t
                .replace('_', "")
                .parse::<i64>()
                .map(Value::Int)
                .map_err(|_| format!("wrong type; expected {}", self.allowed()))?,
            KeyKind::Float { .. } => match t.parse::<f64>() {
                Ok(x) => Value::Float(x),
                Err(_) => return Err(format!("wrong type; expected {}", self.allowed())),
            },
            KeyKind::Bool => match t {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => return Err(format!("wrong type; expected {}", self.allowed())),
            },
            KeyKind::Choice(_) | KeyKind::Text => Value::Str(t.to_string()),
        };
        self.check(v)
    }
}

/// One key of a workload's schema.
#[derive(Debug, Clone)]
pub struct KeySpec {
    /// The key's name.
    pub name: &'static str,
    /// Kind and allowed range.
    pub kind: KeyKind,
    /// The embedded default.
    pub default: fn() -> Value,
    /// One line on what the key means.
    pub doc: &'static str,
}

/// The `seed` key every workload has: the one PRNG every random choice comes from.
pub const SEED: KeySpec =
    crate::int_key!("seed", 0, i64::MAX, 1, "seed of the one PRNG every random choice comes from");

/// The `warmup_s` key (workloads.md "Conventions": 5 s by default, excluded from statistics).
pub const WARMUP: KeySpec = crate::int_key!(
    "warmup_s",
    0,
    3_600,
    5,
    "warm-up before the measurement window (after set-up), excluded from statistics, s"
);

/// The `events` key of the workloads whose events may travel through RabbitMQ: `file` (the run
/// folder) or an `amqp://` URL, which makes the lab collect the run's events from the broker
/// ([`crate::run`] rule 7, events.md "Transport"). Checked by [`events_issue`].
pub const EVENTS: KeySpec = crate::text_key!(
    "events",
    "file",
    "event transport: file (the run folder, default) or amqp://USER:PASS@127.0.0.1:PORT/VHOST \
     (through a RabbitMQ exchange troupe.events, consumed by the lab)"
);

/// The rule of [`EVENTS`], for a workload's cross-key rules: `None` for `file` or an `amqp://`
/// URL, else the issue (the value shown with its password hidden).
pub fn events_issue(c: &Config) -> Option<CrossIssue> {
    let ev = c.str("events");
    (ev != "file" && !ev.starts_with("amqp://")).then(|| {
        let shown = format!("{:?}", crate::events::amqp::redact(ev));
        cross(&["events"], "events", shown, "not allowed; allowed: file, or an amqp://... URL")
    })
}

/// A cross-key problem with the keys it read.
pub type CrossIssue = (Vec<&'static str>, ConfigIssue);

/// A workload's keys plus its cross-key rules.
pub struct Schema {
    /// The workload name, e.g. `scp`.
    pub workload: &'static str,
    /// The keys, in the order the resolved config lists them.
    pub keys: &'static [KeySpec],
    /// Cross-key rules: each issue comes with the keys it reads, and is reported only when
    /// all of those keys are individually valid (otherwise it would judge a default).
    pub cross_check: fn(&Config) -> Vec<CrossIssue>,
}

impl Schema {
    fn key(&self, name: &str) -> Option<&KeySpec> {
        self.keys.iter().find(|k| k.name == name)
    }

    fn known(&self) -> String {
        self.keys.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
    }

    /// ` (did you mean `key`?)` for a mistyped key, else empty.
    fn suggest(&self, name: &str) -> String {
        crate::did_you_mean(name, &self.keys.iter().map(|k| k.name).collect::<Vec<_>>())
    }
}

/// Role 1 of a workload ([`crate::workload`]): who it is and what keys it takes, including which
/// node processes a config gives it (the indices `[net_faults]` partitions name). A [`Config`]
/// carries the `Spec` it was validated against.
pub trait Spec: Sync {
    /// The name users type: `scp`, `chat`.
    fn name(&self) -> &'static str;

    /// One line saying what it measures (shown by `troupe lab config`).
    fn about(&self) -> &'static str;

    /// Its keys, defaults, ranges and cross-key rules.
    fn schema(&self) -> &'static Schema;

    /// The canonical form of a config, so points of a grid that run identically compare equal
    /// (SCP: every fault-free pattern is one run). The default is the config itself.
    fn canonical(&self, cfg: &Config) -> Config {
        cfg.clone()
    }

    /// In a comparison, the fault-free run a point is normalised against, if the workload
    /// normalises (SCP does; `None` otherwise).
    fn baseline_of(&self, _cfg: &Config) -> Option<Config> {
        None
    }

    /// Keys that always appear in a comparison point's name, besides the grid's axes.
    fn point_keys(&self) -> &'static [&'static str] {
        &[]
    }

    /// The node processes of its Troupe system under test for `cfg`, by index, as
    /// `[net_faults]` partitions name them (`server-0`, `devices-1`, ...); or why the workload
    /// cannot apply network faults with this config. The default: it runs in one OS process.
    fn net_nodes(&self, _cfg: &Config) -> std::result::Result<Vec<String>, String> {
        Err("its Troupe system under test runs in one OS process, so there is no inter-node traffic to fault".into())
    }

    /// Whether its Troupe system under test puts each of [`Spec::net_nodes`] in its network
    /// namespace (`net_faults.layer = "network"`, [`crate::netlayer`] rule 2). The default: no,
    /// and such a run is refused.
    fn network_layer(&self) -> bool {
        false
    }

    /// Today's value for a `value` of `key` that an older lab recorded under a word the schema
    /// no longer has (a renamed choice), so recorded run folders keep loading. Only
    /// [`ConfigBuilder::apply_json`] (a recorded resolved config) asks; typed input (TOML,
    /// `--set`) is never translated. The default: nothing was renamed.
    fn recorded_value(&self, _key: &str, _value: &Value) -> Option<Value> {
        None
    }
}

impl fmt::Debug for dyn Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name())
    }
}

/// A resolved, validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    workload: &'static dyn Spec,
    values: BTreeMap<&'static str, Value>,
    order: &'static [KeySpec],
    net_faults: Option<NetFaults>,
}

impl PartialEq for Config {
    fn eq(&self, other: &Config) -> bool {
        self.workload.name() == other.workload.name()
            && self.values == other.values
            && self.net_faults == other.net_faults
    }
}

impl Config {
    /// The workload this config is for.
    pub fn workload(&self) -> &'static str {
        self.workload.name()
    }

    /// The workload's keys role ([`Spec`]): its schema, canonical form and node processes.
    pub fn spec(&self) -> &'static dyn Spec {
        self.workload
    }

    /// The `[net_faults]` section, if the config has one ([`crate::netfaults`]).
    pub fn net_faults(&self) -> Option<&NetFaults> {
        self.net_faults.as_ref()
    }

    /// The value of `key` (every schema key has one).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    /// An integer key's value (0 if the key is not an integer: schema bug).
    pub fn int(&self, key: &str) -> i64 {
        match self.values.get(key) {
            Some(Value::Int(i)) => *i,
            _ => 0,
        }
    }

    /// A number key's value.
    pub fn float(&self, key: &str) -> f64 {
        match self.values.get(key) {
            Some(Value::Float(x)) => *x,
            Some(Value::Int(i)) => *i as f64,
            _ => 0.0,
        }
    }

    /// A boolean key's value.
    pub fn bool(&self, key: &str) -> bool {
        matches!(self.values.get(key), Some(Value::Bool(true)))
    }

    /// A choice key's value.
    pub fn str(&self, key: &str) -> &str {
        match self.values.get(key) {
            Some(Value::Str(s)) => s,
            _ => "",
        }
    }

    /// Sets a key without validation (for canonicalising a config the lab built itself).
    pub fn set_unchecked(&mut self, key: &'static str, v: Value) {
        self.values.insert(key, v);
    }

    /// The resolved config as a flat JSON object (serde_json sorts its keys).
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        for k in self.order {
            if let Some(v) = self.values.get(k.name) {
                m.insert(k.name.to_string(), v.to_json());
            }
        }
        if let Some(nf) = &self.net_faults {
            m.insert(net_faults::SECTION.into(), nf.to_json());
        }
        serde_json::Value::Object(m)
    }
}

/// Builds a [`Config`] from defaults, a TOML file and overrides, collecting every problem.
pub struct ConfigBuilder {
    workload: &'static dyn Spec,
    schema: &'static Schema,
    values: BTreeMap<&'static str, Value>,
    issues: Vec<ConfigIssue>,
    bad: BTreeSet<String>,
    net: Option<NetFaults>,
}

impl ConfigBuilder {
    /// Starts from the workload's embedded defaults.
    pub fn new(workload: &'static dyn Spec) -> Self {
        let schema = workload.schema();
        let values = schema.keys.iter().map(|k| (k.name, (k.default)())).collect();
        ConfigBuilder { workload, schema, values, issues: Vec::new(), bad: BTreeSet::new(), net: None }
    }

    fn issue(&mut self, key: &str, value: String, problem: String) {
        self.bad.insert(key.to_string());
        self.issues.push(ConfigIssue { key: key.to_string(), value, problem });
    }

    /// Applies the `[net_faults]` section given as a JSON object.
    fn put_net(&mut self, section: &serde_json::Value) {
        let found = self.net.get_or_insert_with(NetFaults::default).set_all(section);
        found.into_iter().for_each(|i| self.issue(&i.key, i.value, i.problem));
    }

    fn put(&mut self, key: &str, v: Value) {
        let Some(spec) = self.schema.key(key) else {
            let known = self.schema.known();
            let hint = self.schema.suggest(key);
            self.issue(key, v.to_string(), format!("unknown key{hint}; known keys: {known}"));
            return;
        };
        match spec.kind.check(v.clone()) {
            Ok(v) => {
                self.values.insert(spec.name, v);
            }
            Err(p) => self.issue(key, v.to_string(), p),
        }
    }

    /// Applies a TOML document (a flat table of keys); `origin` names it in messages.
    ///
    /// Unknown keys are refused here, each with the closest known key, rather than by serde's
    /// `deny_unknown_fields`: the keys are each workload's [`Schema`], known only at run time
    /// (no struct to derive on), and serde would stop at the first unknown key while this
    /// reports every problem of the file at once (rule 3).
    ///
    /// ```
    /// let mut b = troupe_lab::config::ConfigBuilder::new(&troupe_lab::testkit::Noop);
    /// b.apply_toml("tiks = 5\n", "my.toml");
    /// let e = b.build().unwrap_err().to_string();
    /// assert!(e.contains("tiks") && e.contains("did you mean `ticks`?"), "{e}");
    /// ```
    pub fn apply_toml(&mut self, text: &str, origin: &str) -> &mut Self {
        let table: toml::Table = match text.parse() {
            Ok(t) => t,
            Err(e) => {
                self.issue(origin, "(file)".into(), format!("not valid TOML: {e}"));
                return self;
            }
        };
        for (k, v) in table {
            if k == net_faults::SECTION {
                self.put_net(&serde_json::to_value(&v).unwrap_or(serde_json::Value::Null));
                continue;
            }
            let val = match v {
                toml::Value::Integer(i) => Value::Int(i),
                toml::Value::Float(x) => Value::Float(x),
                toml::Value::Boolean(b) => Value::Bool(b),
                toml::Value::String(s) => Value::Str(s),
                other => match self.schema.key(&k) {
                    Some(spec) => {
                        let allowed = spec.kind.allowed();
                        self.issue(&k, other.to_string(), format!("wrong type; expected {allowed}"));
                        continue;
                    }
                    // An unknown key is unknown whatever its value (a table, an array).
                    None => Value::Str(other.to_string()),
                },
            };
            self.put(&k, val);
        }
        self
    }

    /// Applies a JSON object of keys (a recorded resolved config); a value the workload renamed
    /// since it was recorded is read in today's words ([`Spec::recorded_value`]).
    pub fn apply_json(&mut self, obj: &serde_json::Value) -> &mut Self {
        let Some(map) = obj.as_object() else {
            self.issue("config", obj.to_string(), "expected a JSON object".into());
            return self;
        };
        for (k, v) in map {
            if k == net_faults::SECTION {
                self.put_net(v);
                continue;
            }
            let val = match v {
                serde_json::Value::Number(n) if n.is_i64() => Value::Int(n.as_i64().unwrap_or(0)),
                serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
                serde_json::Value::Bool(b) => Value::Bool(*b),
                serde_json::Value::String(s) => Value::Str(s.clone()),
                other => {
                    self.issue(k, other.to_string(), "wrong type".into());
                    continue;
                }
            };
            let val = self.workload.recorded_value(k, &val).unwrap_or(val);
            self.put(k, val);
        }
        self
    }

    /// Applies one `key=value` override.
    pub fn apply_set(&mut self, assignment: &str) -> &mut Self {
        let Some((k, v)) = assignment.split_once('=') else {
            self.issue(assignment, "(none)".into(), "expected key=value".into());
            return self;
        };
        let k = k.trim();
        if let Some(sub) = k.strip_prefix(net_faults::SECTION).and_then(|r| r.strip_prefix('.')) {
            if let Err(i) = self.net.get_or_insert_with(NetFaults::default).set_text(sub.trim(), v) {
                self.issue(&i.key, i.value, i.problem);
            }
            return self;
        }
        if k == net_faults::SECTION {
            let keys = net_faults::KEYS.iter().map(|n| format!("net_faults.{n}=...")).collect::<Vec<_>>();
            self.issue(k, v.to_string(), format!("a section: set its keys one by one ({})", keys.join(", ")));
            return self;
        }
        let Some(spec) = self.schema.key(k) else {
            let known = self.schema.known();
            let hint = self.schema.suggest(k);
            self.issue(k, v.to_string(), format!("unknown key{hint}; known keys: {known}"));
            return self;
        };
        match spec.kind.parse(v) {
            Ok(val) => {
                self.values.insert(spec.name, val);
            }
            Err(p) => self.issue(k, v.to_string(), p),
        }
        self
    }

    /// The values applied so far as a JSON object (keys sorted), without validation.
    pub fn values_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        for k in self.schema.keys {
            if let Some(v) = self.values.get(k.name) {
                m.insert(k.name.to_string(), v.to_json());
            }
        }
        if let Some(nf) = &self.net {
            m.insert(net_faults::SECTION.into(), nf.to_json());
        }
        serde_json::Value::Object(m)
    }

    /// Runs the cross-key rules and returns the config, or every problem found.
    pub fn build(&self) -> Result<Config> {
        let mut cfg = Config {
            workload: self.workload,
            values: self.values.clone(),
            order: self.schema.keys,
            net_faults: self.net.clone(),
        };
        // The nemesis's network kinds need the network-fault machinery (crate::nemesis rule 4).
        if cfg.net_faults.is_none() && crate::nemesis::Nemesis::of(&cfg).is_some_and(|n| n.needs_network()) {
            cfg.net_faults = Some(NetFaults::default());
        }
        let mut issues = self.issues.clone();
        for (keys, issue) in (self.schema.cross_check)(&cfg) {
            if keys.iter().all(|k| !self.bad.contains(*k)) {
                issues.push(issue);
            }
        }
        // The section's checks that need the workload (its nodes), once its own keys are valid
        // (a workload key with a bad value kept its valid default, so the nodes are known).
        if let Some(nf) = &self.net {
            if self.bad.iter().all(|k| !k.starts_with(net_faults::SECTION)) {
                issues.extend(net_faults::validate(cfg.workload(), cfg.spec().net_nodes(&cfg), nf));
            }
        }
        if issues.is_empty() {
            Ok(cfg)
        } else {
            Err(Error::new(ErrorKind::InvalidConfig(issues)))
        }
    }
}

/// The config a workload's program was started with: the JSON file named by `TROUPE_CONFIG`
/// (the environment contract), validated against `workload`'s schema.
pub fn from_env(workload: &'static dyn Spec) -> Result<Config> {
    let path = std::env::var_os("TROUPE_CONFIG").map(std::path::PathBuf::from).ok_or_else(|| {
        Error::other("TROUPE_CONFIG is not set; `troupe lab exec` is started by `troupe lab run`".to_string())
    })?;
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::malformed(&path, e.to_string()))?;
    let mut b = ConfigBuilder::new(workload);
    b.apply_json(&json);
    b.build()
}

//! Building a workload's [`Schema`](super::Schema): one line per key instead of a `KeySpec`
//! literal, and the cross-key issue every rule returns.
//!
//! A [`KeySpec`]'s default is a function (`fn() -> Value`), so a `const fn` cannot take the
//! default as a value; the macros [`int_key!`](crate::int_key), [`float_key!`](crate::float_key),
//! [`bool_key!`](crate::bool_key), [`choice_key!`](crate::choice_key) and
//! [`text_key!`](crate::text_key) take it as a value and write the function, and check at
//! compile time that it is allowed (in range, one of the words). Each expands to a call of the
//! `const fn` of the same kind below, so they build `static` schemas.
//!
//! ```
//! use troupe_lab::config::{KeySpec, SEED};
//! use troupe_lab::{choice_key, int_key};
//!
//! const SHAPES: &[&str] = &["ring", "star"];
//! static KEYS: &[KeySpec] = &[
//!     int_key!("nodes", 1, 64, 8, "nodes in the ring"),
//!     choice_key!("shape", SHAPES, "ring", "how the nodes connect"),
//!     SEED,
//! ];
//! assert_eq!(KEYS[0].kind.allowed(), "an integer in 1..=64");
//! assert_eq!((KEYS[1].default)(), troupe_lab::config::Value::Str("ring".into()));
//! ```

use std::fmt::Display;

use super::{CrossIssue, KeyKind, KeySpec, Value};
use crate::error::ConfigIssue;

/// An integer key in `min..=max`; see [`int_key!`](crate::int_key).
pub const fn int(name: &'static str, min: i64, max: i64, default: fn() -> Value, doc: &'static str) -> KeySpec {
    KeySpec { name, kind: KeyKind::Int { min, max }, default, doc }
}

/// A number key in `min..=max`; see [`float_key!`](crate::float_key).
pub const fn float(name: &'static str, min: f64, max: f64, default: fn() -> Value, doc: &'static str) -> KeySpec {
    KeySpec { name, kind: KeyKind::Float { min, max }, default, doc }
}

/// A boolean key; see [`bool_key!`](crate::bool_key).
pub const fn boolean(name: &'static str, default: fn() -> Value, doc: &'static str) -> KeySpec {
    KeySpec { name, kind: KeyKind::Bool, default, doc }
}

/// A key taking one of `words`; see [`choice_key!`](crate::choice_key).
pub const fn choice(
    name: &'static str,
    words: &'static [&'static str],
    default: fn() -> Value,
    doc: &'static str,
) -> KeySpec {
    KeySpec { name, kind: KeyKind::Choice(words), default, doc }
}

/// A free-text key; see [`text_key!`](crate::text_key).
pub const fn text(name: &'static str, default: fn() -> Value, doc: &'static str) -> KeySpec {
    KeySpec { name, kind: KeyKind::Text, default, doc }
}

/// Whether `word` is one of `words` (usable in constants: the macros' compile-time check).
pub const fn is_one_of(words: &[&str], word: &str) -> bool {
    let mut i = 0;
    while i < words.len() {
        if same(words[i].as_bytes(), word.as_bytes()) {
            return true;
        }
        i += 1;
    }
    false
}

const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// One problem a cross-key rule found: the keys it read (it is reported only when each of them
/// is valid on its own), the key it names, the value as shown and what is wrong.
pub fn cross(reads: &[&'static str], key: &str, value: impl Display, problem: impl Into<String>) -> CrossIssue {
    (reads.to_vec(), ConfigIssue { key: key.into(), value: value.to_string(), problem: problem.into() })
}

/// `int_key!(name, min, max, default, doc)`: an integer key in `min..=max` (a [`KeySpec`]);
/// the default is checked to be in range at compile time.
#[macro_export]
macro_rules! int_key {
    ($name:expr, $min:expr, $max:expr, $default:expr, $doc:expr $(,)?) => {{
        const _: () = assert!($min <= $default && $default <= $max, "the default is out of range");
        $crate::config::keys::int($name, $min, $max, || $crate::config::Value::Int($default), $doc)
    }};
}

/// `float_key!(name, min, max, default, doc)`: a number key in `min..=max` (a [`KeySpec`]);
/// the default is checked to be in range at compile time.
#[macro_export]
macro_rules! float_key {
    ($name:expr, $min:expr, $max:expr, $default:expr, $doc:expr $(,)?) => {{
        const _: () = assert!($min <= $default && $default <= $max, "the default is out of range");
        $crate::config::keys::float($name, $min, $max, || $crate::config::Value::Float($default), $doc)
    }};
}

/// `bool_key!(name, default, doc)`: a boolean key (a [`KeySpec`]).
#[macro_export]
macro_rules! bool_key {
    ($name:expr, $default:expr, $doc:expr $(,)?) => {
        $crate::config::keys::boolean($name, || $crate::config::Value::Bool($default), $doc)
    };
}

/// `choice_key!(name, words, default, doc)`: a key taking one of `words` (a [`KeySpec`]); the
/// default is checked to be one of them at compile time.
#[macro_export]
macro_rules! choice_key {
    ($name:expr, $words:expr, $default:expr, $doc:expr $(,)?) => {{
        const _: () = assert!($crate::config::keys::is_one_of($words, $default), "the default is not one of the words");
        $crate::config::keys::choice(
            $name,
            $words,
            || $crate::config::Value::Str(::std::string::String::from($default)),
            $doc,
        )
    }};
}

/// `text_key!(name, default, doc)`: a free-text key (a [`KeySpec`]); the workload's cross-key
/// rules check its shape.
#[macro_export]
macro_rules! text_key {
    ($name:expr, $default:expr, $doc:expr $(,)?) => {
        $crate::config::keys::text($name, || $crate::config::Value::Str(::std::string::String::from($default)), $doc)
    };
}

pub use crate::{bool_key, choice_key, float_key, int_key, text_key};

#[cfg(test)]
mod tests {
    use super::*;

    const WORDS: &[&str] = &["a", "bc"];
    static KEYS: &[KeySpec] = &[
        int_key!("i", 1, 10, 3, "an int"),
        float_key!("f", 0.0, 1.0, 0.5, "a float"),
        bool_key!("b", true, "a bool"),
        choice_key!("c", WORDS, "bc", "a choice"),
        text_key!("t", "file", "a text"),
    ];

    #[test]
    fn the_macros_build_the_kinds_and_defaults() {
        let got: Vec<(String, Value)> = KEYS.iter().map(|k| (k.kind.allowed(), (k.default)())).collect();
        assert_eq!(
            got,
            [
                ("an integer in 1..=10".to_string(), Value::Int(3)),
                ("a number in 0..=1".to_string(), Value::Float(0.5)),
                ("true or false".to_string(), Value::Bool(true)),
                ("one of a, bc".to_string(), Value::Str("bc".into())),
                ("a string".to_string(), Value::Str("file".into())),
            ]
        );
        assert_eq!(KEYS.iter().map(|k| k.name).collect::<Vec<_>>(), ["i", "f", "b", "c", "t"]);
    }

    #[test]
    fn is_one_of_compares_whole_words() {
        assert!(is_one_of(WORDS, "bc"));
        assert!(!is_one_of(WORDS, "b"));
        assert!(!is_one_of(WORDS, "bcd"));
        assert!(!is_one_of(&[], "a"));
    }

    #[test]
    fn cross_names_the_keys_read_and_the_issue() {
        let (reads, issue) = cross(&["r", "w"], "r+w", "1 + 1 <= n = 3", "too small");
        assert_eq!(reads, ["r", "w"]);
        assert_eq!(issue.to_string(), "r+w = 1 + 1 <= n = 3: too small");
    }
}

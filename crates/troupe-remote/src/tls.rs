//! Optional mutual TLS (rustls, with the `ring` provider) under the HMAC handshake: with a
//! `[tls]` section every connection is wrapped in TLS before the handshake runs inside it, both
//! sides present a certificate, and each side accepts only certificates chained to the
//! configured CA. TLS authenticates the node's certificate and encrypts; the HMAC handshake still
//! proves the cluster secret (defence in depth).
//!
//! Rules:
//! 1. Files are read and checked when the node starts; a missing, unreadable or malformed file is
//!    a `Config` error naming the key, the path and what to do.
//! 2. The dialler verifies the acceptor's certificate against the CA and the dialled host (an IP
//!    address needs an IP SAN), or against `server_name` when it is set (one name every node's
//!    certificate carries, for clusters addressed by changing IPs).
//! 3. The acceptor requires a client certificate chained to the CA; anything else fails the TLS
//!    handshake, which closes that connection only (counted in `tls_failures`).
//!
//! 4. [`dev_certs`] makes a throw-away CA and node certificates for development, tests and
//!    benchmarks (`troupe node --dev-certs DIR --names a,b`). It writes only plain file names
//!    inside its folder, never through a symbolic link (the folder's or a file's), never over a
//!    file already there unless asked to ([`dev_certs_with`], `--force`), and refuses a name
//!    given twice; it checks all of that before it writes anything.
//! 5. A node's certificate names it: its subject common name (CN) is the node's name
//!    ([`dev_certs`] makes them so), and the handshake refuses a node whose stated name is not
//!    the CN of the certificate it presented (`handshake.rs` rule 8).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use serde::{Deserialize, Serialize};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::error::{Error, ErrorKind};

/// The `[tls]` section of a node's configuration (all three files required).
///
/// ```
/// let cfg: troupe_remote::NodeConfig = toml::from_str(r#"
///     name = "a"
///     secret = "change me"
///     [tls]
///     cert = "/etc/troupe/a.crt"   # this node's certificate chain (PEM)
///     key = "/etc/troupe/a.key"    # its private key (PEM, PKCS#8, PKCS#1 or SEC1)
///     ca = "/etc/troupe/ca.crt"    # the CA every node's certificate is signed by (PEM)
/// "#).unwrap();
/// assert!(cfg.tls.is_some());
/// ```
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// This node's certificate chain, PEM.
    pub cert: String,
    /// This node's private key, PEM.
    pub key: String,
    /// The cluster's CA certificate(s), PEM: peers must present a certificate it signed.
    pub ca: String,
    /// Verify every acceptor's certificate against this name instead of the dialled host.
    #[serde(default)]
    pub server_name: Option<String>,
}

/// The loaded TLS setup of a node.
pub(crate) struct Tls {
    pub(crate) acceptor: TlsAcceptor,
    pub(crate) connector: TlsConnector,
    server_name: Option<ServerName<'static>>,
}

fn bad(key: &str, path: &str, what: &str) -> Error {
    Error::new(ErrorKind::Config(format!(
        "tls.{key} = {path:?}: {what}; point it at a PEM file (see docs/distribution.md, \"Mutual TLS\")"
    )))
}

fn certs(key: &str, path: &str) -> Result<Vec<CertificateDer<'static>>, Error> {
    if !Path::new(path).is_file() {
        return Err(bad(key, path, "no such file"));
    }
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(key, path, &format!("cannot read it ({e})")))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(key, path, &format!("not valid PEM ({e})")))?;
    if certs.is_empty() {
        return Err(bad(key, path, "holds no CERTIFICATE block"));
    }
    Ok(certs)
}

impl Tls {
    /// Rule 1.
    pub(crate) fn load(c: &TlsConfig) -> Result<Tls, Error> {
        let chain = certs("cert", &c.cert)?;
        if !Path::new(&c.key).is_file() {
            return Err(bad("key", &c.key, "no such file"));
        }
        let key = PrivateKeyDer::from_pem_file(&c.key)
            .map_err(|e| bad("key", &c.key, &format!("holds no usable private key ({e})")))?;
        let mut roots = RootCertStore::empty();
        for ca in certs("ca", &c.ca)? {
            roots.add(ca).map_err(|e| bad("ca", &c.ca, &format!("not a usable CA certificate ({e})")))?;
        }
        let roots = Arc::new(roots);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config_err = |e: rustls::Error| Error::new(ErrorKind::Config(format!("tls: {e}")));
        let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
            .build()
            .map_err(|e| Error::new(ErrorKind::Config(format!("tls.ca = {:?}: {e}", c.ca))))?;
        let server = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(config_err)?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain.clone(), key.clone_key())
            .map_err(|e| bad("key", &c.key, &format!("does not match tls.cert ({e})")))?;
        let client = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(config_err)?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .map_err(|e| bad("key", &c.key, &format!("does not match tls.cert ({e})")))?;
        let server_name = match &c.server_name {
            Some(n) => Some(
                ServerName::try_from(n.clone())
                    .map_err(|e| Error::new(ErrorKind::Config(format!("tls.server_name = {n:?}: {e}"))))?,
            ),
            None => None,
        };
        Ok(Tls {
            acceptor: TlsAcceptor::from(Arc::new(server)),
            connector: TlsConnector::from(Arc::new(client)),
            server_name,
        })
    }

    /// Rule 2: the name the dialler checks the acceptor's certificate against.
    pub(crate) fn name_for(&self, addr: &str) -> Result<ServerName<'static>, Error> {
        if let Some(n) = &self.server_name {
            return Ok(n.clone());
        }
        let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h).trim_start_matches('[').trim_end_matches(']');
        ServerName::try_from(host.to_owned()).map_err(|e| {
            Error::new(ErrorKind::Unreachable(format!(
                "{addr}: {host:?} cannot be checked against a certificate ({e})"
            )))
        })
    }
}

/// One DER element: (tag, contents, what follows). Low tag numbers and definite lengths up
/// to 4 bytes, which is all a certificate's outer structure uses.
fn der(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, b) = b.split_first()?;
    let (&l0, mut b) = b.split_first()?;
    let len = if l0 < 0x80 {
        usize::from(l0)
    } else {
        let n = usize::from(l0 & 0x7f);
        if n == 0 || n > 4 || b.len() < n {
            return None;
        }
        let len = b[..n].iter().fold(0usize, |l, &x| (l << 8) | usize::from(x));
        b = &b[n..];
        len
    };
    (b.len() >= len).then(|| (tag, &b[..len], &b[len..]))
}

/// The subject common name (CN, OID 2.5.4.3) of a DER certificate, when it has one as a
/// UTF8String, PrintableString or IA5String (`handshake.rs` rule 8 binds a node's name to it).
pub(crate) fn subject_common_name(cert: &[u8]) -> Option<String> {
    const SEQ: u8 = 0x30;
    let (_, cert, _) = der(cert).filter(|e| e.0 == SEQ)?;
    let (_, mut tbs, _) = der(cert).filter(|e| e.0 == SEQ)?;
    if der(tbs)?.0 == 0xa0 {
        tbs = der(tbs)?.2; // [0] version
    }
    for _ in 0..4 {
        tbs = der(tbs)?.2; // serial number, signature algorithm, issuer, validity
    }
    let (_, mut subject, _) = der(tbs).filter(|e| e.0 == SEQ)?;
    while !subject.is_empty() {
        let (_, mut set, rest) = der(subject)?;
        subject = rest;
        while !set.is_empty() {
            let (_, atv, rest) = der(set)?;
            set = rest;
            let (tag, oid, value) = der(atv)?;
            if tag == 0x06 && oid == [0x55, 0x04, 0x03] {
                let (vt, v, _) = der(value)?;
                return matches!(vt, 0x0c | 0x13 | 0x16).then(|| String::from_utf8(v.to_vec()).ok()).flatten();
            }
        }
    }
    None
}

/// Writes a fresh development CA (`ca.crt`, `ca.key`) and, for each of `names`, a certificate
/// signed by it (`NAME.crt`, `NAME.key`, valid for `hosts`: IP addresses and DNS names) into
/// `dir`, and returns each node's `[tls]` settings. Keys are created readable by the owner only.
/// For development, tests and benchmarks; production clusters use their own CA.
///
/// It never writes through a symbolic link (neither `dir` nor a file in it may be one) and
/// never replaces a file that is already there: see [`dev_certs_with`] to replace them.
/// Duplicate names are refused.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("troupe-doc-certs-{}", std::process::id()));
/// let tls = troupe_remote::dev_certs(&dir, &["a", "b"], &["127.0.0.1", "localhost"]).unwrap();
/// assert!(std::path::Path::new(&tls[1].cert).ends_with("b.crt"));
/// // A second run would replace the keys: refused unless asked for.
/// assert!(troupe_remote::dev_certs(&dir, &["a"], &["127.0.0.1"]).is_err());
/// assert!(troupe_remote::dev_certs_with(&dir, &["a"], &["127.0.0.1"], true).is_ok());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[cfg(feature = "tls-dev-certs")]
pub fn dev_certs(dir: &Path, names: &[&str], hosts: &[&str]) -> Result<Vec<TlsConfig>, Error> {
    dev_certs_with(dir, names, hosts, false)
}

/// [`dev_certs`], replacing files that are already there when `replace` is true
/// (`troupe node --dev-certs DIR --force`); a symbolic link is refused either way.
#[cfg(feature = "tls-dev-certs")]
pub fn dev_certs_with(dir: &Path, names: &[&str], hosts: &[&str], replace: bool) -> Result<Vec<TlsConfig>, Error> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let place = |what: &str| format!("dev certificates in {}: {what}", dir.display());
    let fail = |what: &str, e: std::io::Error| Error::io(place(what), e);
    let refuse = |what: &str, why: &str| Error::from(ErrorKind::Io(format!("{} {why}", place(what))));
    let cert_fail = |what: &str, e: rcgen::Error| Error::with_source(ErrorKind::Other(place(what)), e);
    // Each name becomes NAME.crt and NAME.key inside `dir`: only plain file names, so no name
    // writes outside the folder (issue 18).
    for (i, name) in names.iter().enumerate() {
        let plain = !name.is_empty()
            && *name != "."
            && *name != ".."
            && name != &"ca"
            && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !plain {
            return Err(Error::config(format!(
                "node name {:?} for --dev-certs is not a plain file name (letters, digits, '-', '_', '.'; \
                 not '.', '..' or 'ca')",
                crate::logging::esc(name)
            )));
        }
        if names[..i].contains(name) {
            return Err(Error::config(format!(
                "node name {:?} is given twice to --dev-certs; name each node once",
                crate::logging::esc(name)
            )));
        }
    }
    if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(refuse("the folder", "is a symbolic link; give the real folder instead"));
    }
    std::fs::create_dir_all(dir).map_err(|e| fail("cannot create the folder", e))?;
    // Nothing is written unless every file can be: checked first (issue 36: a planted symlink
    // was followed, and an existing ca.key silently replaced).
    let files: Vec<String> = ["ca.crt".to_owned(), "ca.key".to_owned()]
        .into_iter()
        .chain(names.iter().flat_map(|n| [format!("{n}.crt"), format!("{n}.key")]))
        .collect();
    for file in &files {
        match std::fs::symlink_metadata(dir.join(file)) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(refuse(file, "is a symbolic link; nothing was written (remove it first)"));
            }
            Ok(_) if !replace => {
                return Err(refuse(file, "already exists; nothing was written (--force replaces it)"));
            }
            _ => {}
        }
    }
    let write = |file: &str, text: String, secret: bool| -> Result<String, Error> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let path = dir.join(file);
        if replace {
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(fail(file, e)),
                _ => {}
            }
        }
        // `create_new` (O_CREAT | O_EXCL) fails on any existing path, a symbolic link planted
        // since the check included; a key is created with its final permissions.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(if secret { 0o600 } else { 0o644 })
            .open(&path)
            .map_err(|e| fail(file, e))?;
        f.write_all(text.as_bytes()).map_err(|e| fail(file, e))?;
        Ok(path.display().to_string())
    };
    let ca_key = KeyPair::generate().map_err(|e| cert_fail("CA key", e))?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(|e| cert_fail("CA", e))?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "troupe development CA");
    let ca = ca_params.self_signed(&ca_key).map_err(|e| cert_fail("CA", e))?;
    let ca_path = write("ca.crt", ca.pem(), false)?;
    write("ca.key", ca_key.serialize_pem(), true)?;
    let sans: Vec<String> = hosts.iter().map(|h| (*h).to_owned()).collect();
    names
        .iter()
        .map(|name| {
            let key = KeyPair::generate().map_err(|e| cert_fail(name, e))?;
            let mut p = CertificateParams::new(sans.clone()).map_err(|e| cert_fail(name, e))?;
            p.distinguished_name.push(DnType::CommonName, *name);
            let cert = p.signed_by(&key, &ca, &ca_key).map_err(|e| cert_fail(name, e))?;
            Ok(TlsConfig {
                cert: write(&format!("{name}.crt"), cert.pem(), false)?,
                key: write(&format!("{name}.key"), key.serialize_pem(), true)?,
                ca: ca_path.clone(),
                server_name: None,
            })
        })
        .collect()
}

/// The `[tls]` section of a node's TOML for these settings.
#[must_use]
pub fn toml_section(t: &TlsConfig) -> String {
    let mut s = format!("[tls]\ncert = {:?}\nkey = {:?}\nca = {:?}\n", t.cert, t.key, t.ca);
    if let Some(n) = &t.server_name {
        s.push_str(&format!("server_name = {n:?}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("troupe-devcerts-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// Regression (issue 36): `--dev-certs` followed a symlink planted in its folder.
    #[test]
    fn rule_4_dev_certs_never_writes_through_a_symbolic_link() {
        let d = fresh("link");
        std::fs::create_dir_all(&d).unwrap();
        let target = d.join("elsewhere");
        std::os::unix::fs::symlink(&target, d.join("a.key")).unwrap();
        for replace in [false, true] {
            let e = dev_certs_with(&d, &["a"], &["127.0.0.1"], replace).unwrap_err().to_string();
            assert!(e.contains("symbolic link"), "{e}");
        }
        assert!(!target.exists(), "written through the link");
        assert!(!d.join("ca.key").exists(), "nothing is written when one file is refused");
        let linked = fresh("linked-dir");
        std::os::unix::fs::symlink(&d, &linked).unwrap();
        assert!(dev_certs(&linked, &["b"], &["127.0.0.1"]).unwrap_err().to_string().contains("symbolic link"));
        std::fs::remove_file(&linked).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Regression (issue 36): an existing `ca.key` was replaced silently.
    #[test]
    fn rule_4_dev_certs_keeps_existing_keys_unless_asked_to_replace_them() {
        let d = fresh("exists");
        dev_certs(&d, &["a"], &["127.0.0.1"]).unwrap();
        let key = std::fs::read(d.join("ca.key")).unwrap();
        let e = dev_certs(&d, &["b"], &["127.0.0.1"]).unwrap_err().to_string();
        assert!(e.contains("already exists") && e.contains("--force"), "{e}");
        assert_eq!(std::fs::read(d.join("ca.key")).unwrap(), key);
        assert!(!d.join("b.crt").exists());
        dev_certs_with(&d, &["a"], &["127.0.0.1"], true).unwrap();
        assert_ne!(std::fs::read(d.join("ca.key")).unwrap(), key, "replaced when asked");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(d.join("a.key")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_subject_common_name_is_read_from_a_certificate() {
        use rcgen::{CertificateParams, DnType, KeyPair};
        for cn in ["b", "node-7.example", "ünï"] {
            let key = KeyPair::generate().unwrap();
            let mut p = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
            p.distinguished_name.push(DnType::OrganizationName, "troupe");
            p.distinguished_name.push(DnType::CommonName, cn);
            let cert = p.self_signed(&key).unwrap();
            assert_eq!(subject_common_name(cert.der()).as_deref(), Some(cn));
        }
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(vec!["x".to_owned()]).unwrap();
        p.distinguished_name = rcgen::DistinguishedName::new();
        p.distinguished_name.push(DnType::OrganizationName, "troupe");
        let cert = p.self_signed(&key).unwrap();
        assert_eq!(subject_common_name(cert.der()), None, "no CN");
        assert_eq!(subject_common_name(&cert.der()[..40]), None, "truncated");
        assert_eq!(subject_common_name(b""), None);
    }

    /// Regression (issue 36): `--names a,a` was accepted.
    #[test]
    fn rule_4_dev_certs_refuses_a_name_given_twice() {
        let d = fresh("dup");
        let e = dev_certs(&d, &["a", "b", "a"], &["127.0.0.1"]).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Config(_)) && e.to_string().contains("twice"), "{e}");
        assert!(!d.exists(), "refused before anything was made");
    }
}

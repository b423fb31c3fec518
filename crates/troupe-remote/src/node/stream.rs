//! A connection's byte stream: plain TCP, TCP under TLS (`tls.rs`), or a routed stream through
//! other nodes (`relay.rs`), itself under TLS when the node uses TLS. The plain case keeps
//! tokio's owned halves, whose `try_write`/`try_read` the write-through and spinning fast paths
//! use (rules 2-3 of `lane.rs`, `spin_us`); in the others those paths step aside (`try_*`
//! answer `WouldBlock`) and every write goes through the writer task.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, DuplexStream, ReadBuf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

type TlsStream = tokio_rustls::TlsStream<TcpStream>;
type TunnelTlsStream = tokio_rustls::TlsStream<DuplexStream>;

/// A whole connection.
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
    /// A routed connection (`relay.rs`): this end of an in-process pipe whose other end a
    /// relay task carries over a neighbour's session.
    Tunnel(DuplexStream),
    /// A routed connection under TLS, end to end (the relays see only ciphertext).
    TunnelTls(Box<TunnelTlsStream>),
}

/// The read half of a connection.
pub(crate) enum ReadHalf {
    Plain(OwnedReadHalf),
    Split(tokio::io::ReadHalf<Stream>),
}

/// The write half of a connection. The plain half is shared (`Arc`) so senders can write
/// through it; the others have one owner, the writer task.
pub(crate) enum WriteHalf {
    Plain(Arc<OwnedWriteHalf>),
    Split(tokio::io::WriteHalf<Stream>),
}

impl Stream {
    pub(crate) fn into_split(self) -> (ReadHalf, WriteHalf) {
        match self {
            Stream::Plain(s) => {
                let (r, w) = s.into_split();
                (ReadHalf::Plain(r), WriteHalf::Plain(Arc::new(w)))
            }
            other => {
                let (r, w) = tokio::io::split(other);
                (ReadHalf::Split(r), WriteHalf::Split(w))
            }
        }
    }

    /// Under TLS, the subject common name of the certificate the other side presented (empty
    /// when it has none; `handshake.rs` rule 8); `None` for plain TCP.
    pub(crate) fn peer_cert_name(&self) -> Option<String> {
        let certs = match self {
            Stream::Tls(t) => match &**t {
                tokio_rustls::TlsStream::Client(c) => c.get_ref().1.peer_certificates(),
                tokio_rustls::TlsStream::Server(s) => s.get_ref().1.peer_certificates(),
            },
            Stream::TunnelTls(t) => match &**t {
                tokio_rustls::TlsStream::Client(c) => c.get_ref().1.peer_certificates(),
                tokio_rustls::TlsStream::Server(s) => s.get_ref().1.peer_certificates(),
            },
            Stream::Plain(_) | Stream::Tunnel(_) => return None,
        };
        Some(certs.and_then(<[_]>::first).and_then(|c| crate::tls::subject_common_name(c)).unwrap_or_default())
    }

    /// A non-blocking read into `buf`'s spare capacity (plain only; `WouldBlock` under TLS).
    pub(crate) fn try_read_buf(&self, buf: &mut Vec<u8>) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.try_read_buf(buf),
            _ => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

impl WriteHalf {
    /// The socket senders may write through, if any.
    pub(crate) fn shared(&self) -> Option<Arc<OwnedWriteHalf>> {
        match self {
            WriteHalf::Plain(w) => Some(w.clone()),
            WriteHalf::Split(_) => None,
        }
    }

    /// Writes all of `buf` (plain: readiness, then non-blocking writes on the shared half).
    pub(crate) async fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        match self {
            WriteHalf::Plain(w) => {
                while !buf.is_empty() {
                    w.writable().await?;
                    match w.try_write(buf) {
                        Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                        Ok(n) => buf = &buf[n..],
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            }
            WriteHalf::Split(w) => {
                w.write_all(buf).await?;
                w.flush().await
            }
        }
    }
}

impl AsyncRead for ReadHalf {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReadHalf::Plain(r) => Pin::new(r).poll_read(cx, buf),
            ReadHalf::Split(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Stream::Tunnel(s) => Pin::new(s).poll_read(cx, buf),
            Stream::TunnelTls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            Stream::Tunnel(s) => Pin::new(s).poll_write(cx, buf),
            Stream::TunnelTls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            Stream::Tunnel(s) => Pin::new(s).poll_flush(cx),
            Stream::TunnelTls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Stream::Tunnel(s) => Pin::new(s).poll_shutdown(cx),
            Stream::TunnelTls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

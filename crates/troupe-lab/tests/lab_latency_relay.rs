//! The lab's delaying relay (`troupe_lab::relay`) against a bounded echo server on loopback:
//! each test names the rule of `relay.rs` it checks.

use std::io::{Cursor, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use troupe_lab::relay::{serve_lines, Relay, RelayStats};

/// An echo server for `conns` connections: each echoes what it reads until end of stream,
/// then closes (bounded: the thread ends after `conns` connections).
fn echo(conns: usize) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().take(conns) {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 65536];
                loop {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if s.write_all(&buf[..n]).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    addr
}

fn connect(r: &Relay) -> TcpStream {
    let s = TcpStream::connect(r.addr()).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s
}

/// Polls the relay's counts until `done` holds (deadline 10 s).
fn wait_stats(r: &Relay, done: impl Fn(&RelayStats) -> bool) -> RelayStats {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = r.stats();
        if done(&s) || Instant::now() > deadline {
            return s;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn rule2_a_round_trip_takes_at_least_the_rtt() {
    let rtt = Duration::from_millis(20);
    let relay = Relay::bind(rtt / 2).unwrap();
    relay.forward_to(echo(1));
    let mut c = connect(&relay);
    for i in 0..5u8 {
        let t0 = Instant::now();
        c.write_all(&[i; 100]).unwrap();
        let mut b = [0u8; 100];
        c.read_exact(&mut b).unwrap();
        let took = t0.elapsed();
        assert_eq!(b, [i; 100]);
        assert!(took >= rtt, "round trip {i} took {took:?}, less than the rtt {rtt:?}");
    }
}

/// Echoes `total` patterned bytes through a fresh 1 ms relay, checks every byte came back in
/// order, and returns the relay's counts once it has written them all.
fn echo_through_relay(total: usize) -> RelayStats {
    let relay = Relay::bind(Duration::from_millis(1)).unwrap();
    relay.forward_to(echo(1));
    let mut c = connect(&relay);
    let data: Vec<u8> = (0..total).map(|i| (i % 251) as u8).collect();
    let mut w = c.try_clone().unwrap();
    let sent = data.clone();
    let writer = std::thread::spawn(move || w.write_all(&sent).unwrap());
    let mut back = vec![0u8; total];
    c.read_exact(&mut back).unwrap();
    writer.join().unwrap();
    assert!(back == data, "the echoed bytes differ from the sent ones (order or content)");
    let t = total as u64;
    wait_stats(&relay, |s| s.bytes_down_out == t)
}

#[test]
fn rule2_order_and_every_byte_are_kept_and_rule4_counts_them() {
    let total = 3 << 20;
    let t = total as u64;
    let s = echo_through_relay(total);
    assert_eq!(s.connections, 1);
    assert_eq!((s.bytes_up_in, s.bytes_up_out), (t, t), "{s:?}");
    assert_eq!((s.bytes_down_in, s.bytes_down_out), (t, t), "{s:?}");
}

#[test]
fn rule2_bandwidth_is_kept_a_stream_pays_the_delay_once() {
    // 8 MiB echoed through a 20 ms (each way) relay: a relay that delayed each 64 KiB chunk
    // one after another would take at least 128 chunks x 2 ways x 20 ms = 5.1 s; pipelined it
    // is one delay each way plus copying.
    let relay = Relay::bind(Duration::from_millis(20)).unwrap();
    relay.forward_to(echo(1));
    let mut c = connect(&relay);
    let total = 8 << 20;
    let mut w = c.try_clone().unwrap();
    let t0 = Instant::now();
    let writer = std::thread::spawn(move || w.write_all(&vec![7u8; total]).unwrap());
    let mut back = vec![0u8; total];
    c.read_exact(&mut back).unwrap();
    let took = t0.elapsed();
    writer.join().unwrap();
    assert!(took >= Duration::from_millis(40), "took {took:?}");
    assert!(took < Duration::from_millis(2500), "8 MiB took {took:?}: the relay serialises its delays");
}

#[test]
fn rule1_a_connection_waits_for_the_target() {
    let relay = Relay::bind(Duration::ZERO).unwrap();
    let mut c = connect(&relay);
    c.write_all(b"early").unwrap();
    relay.forward_to(echo(1));
    let mut b = [0u8; 5];
    c.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"early");
}

#[test]
fn rule5_end_of_stream_is_passed_on() {
    let relay = Relay::bind(Duration::from_millis(2)).unwrap();
    relay.forward_to(echo(1));
    let mut c = connect(&relay);
    c.write_all(b"last words").unwrap();
    c.shutdown(std::net::Shutdown::Write).unwrap();
    let mut all = Vec::new();
    c.read_to_end(&mut all).unwrap();
    assert_eq!(all, b"last words");
}

#[test]
fn rule6_the_line_protocol_answers_each_command() {
    let input = "listen\n\nforward 127.0.0.1:1 127.0.0.1:2\nforward x\nstats\nquit\nlisten\n";
    let mut out = Vec::new();
    serve_lines(Duration::ZERO, Cursor::new(input), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "one answer per command up to quit: {text}");
    let addr = lines[0].strip_prefix("listening ").expect(lines[0]);
    assert!(addr.parse::<SocketAddr>().unwrap().ip().is_loopback());
    assert!(lines[1].starts_with("error forward: no relay listens on \"127.0.0.1:1\""), "{}", lines[1]);
    assert!(lines[2].starts_with("error unknown command"), "{}", lines[2]);
    let stats: serde_json::Value = serde_json::from_str(lines[3].strip_prefix("stats ").unwrap()).unwrap();
    assert_eq!(stats["connections"], 0);
}

#[test]
fn rule6_forward_through_the_line_protocol_relays() {
    let target = echo(1);
    let (to_relay, from_test) = std::sync::mpsc::channel::<String>();
    struct Lines(std::sync::mpsc::Receiver<String>, Vec<u8>);
    impl Read for Lines {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.1.is_empty() {
                match self.0.recv_timeout(Duration::from_secs(30)) {
                    Ok(l) => self.1 = l.into_bytes(),
                    Err(_) => return Ok(0),
                }
            }
            let n = self.1.len().min(buf.len());
            buf[..n].copy_from_slice(&self.1[..n]);
            self.1.drain(..n);
            Ok(n)
        }
    }
    let (answers_tx, answers) = std::sync::mpsc::channel::<String>();
    struct Out(std::sync::mpsc::Sender<String>);
    impl Write for Out {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let _ = self.0.send(String::from_utf8_lossy(buf).into_owned());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let server = std::thread::spawn(move || {
        serve_lines(Duration::from_millis(1), std::io::BufReader::new(Lines(from_test, Vec::new())), Out(answers_tx))
    });
    let next = || {
        let mut s = String::new();
        while !s.ends_with('\n') {
            s.push_str(&answers.recv_timeout(Duration::from_secs(30)).unwrap());
        }
        s.trim().to_string()
    };
    to_relay.send("listen\n".into()).unwrap();
    let l = next();
    let addr = l.strip_prefix("listening ").unwrap().to_string();
    to_relay.send(format!("forward {addr} {target}\n")).unwrap();
    assert_eq!(next(), "ok");
    let mut c = TcpStream::connect(&addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c.write_all(b"through").unwrap();
    let mut b = [0u8; 7];
    c.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"through");
    to_relay.send("quit\n".into()).unwrap();
    server.join().unwrap().unwrap();
}

#[test]
fn rule8_chunks_wait_in_pipes_where_the_kernel_splices_else_in_buffers() {
    let s = echo_through_relay(2 << 20);
    if troupe_lab::relay::pipes::available() {
        assert!(s.chunks_piped >= 2, "splicing works here, yet chunks were not piped: {s:?}");
        assert_eq!(s.chunks_copied, 0, "{s:?}");
    } else {
        assert!(s.chunks_copied >= 2, "{s:?}");
        assert_eq!(s.chunks_piped, 0, "{s:?}");
    }
}

//! A minimal blocking HTTP/1.1 client, so tests control every byte on the wire.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A parsed response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One keep-alive connection.
pub struct Conn {
    reader: BufReader<TcpStream>,
}

impl Conn {
    pub fn open(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        s.set_nodelay(true).expect("nodelay");
        Conn {
            reader: BufReader::new(s),
        }
    }

    pub fn stream(&self) -> &TcpStream {
        self.reader.get_ref()
    }

    pub fn send(&mut self, raw: &[u8]) -> io::Result<()> {
        self.reader.get_mut().write_all(raw)
    }

    /// `GET path` with extra header lines (each ending in \r\n).
    pub fn get(&mut self, path: &str, extra: &str) -> Response {
        self.request("GET", path, extra)
    }

    pub fn request(&mut self, method: &str, path: &str, extra: &str) -> Response {
        let raw = format!("{method} {path} HTTP/1.1\r\nHost: test\r\n{extra}\r\n");
        self.send(raw.as_bytes()).expect("send");
        self.read_response(method == "HEAD").expect("response")
    }

    /// Reads one response; `head` says the request was HEAD (no body follows).
    pub fn read_response(&mut self, head: bool) -> io::Result<Response> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed"));
        }
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| io::Error::other(format!("bad status line {line:?}")))?;
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((n, v)) = l.split_once(':') {
                headers.push((n.trim().to_string(), v.trim().to_string()));
            }
        }
        let mut r = Response {
            status,
            headers,
            body: Vec::new(),
        };
        let len: usize = r
            .header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if !head && status != 304 && status != 204 {
            r.body.resize(len, 0);
            self.reader.read_exact(&mut r.body)?;
        }
        Ok(r)
    }

    /// Whether the server closed the connection (EOF or reset) within the read timeout.
    pub fn closed_by_server(&mut self) -> bool {
        let mut buf = [0u8; 1024];
        loop {
            match self.reader.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e) => {
                    return !matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    );
                }
            }
        }
    }
}

/// One request on a fresh connection.
pub fn get(addr: SocketAddr, path: &str) -> Response {
    Conn::open(addr).get(path, "")
}

//! The gateway address of design.md#environment: `HOST:PORT` or `http://HOST:PORT[/]`, loopback hosts only.
//!
//! HOST is `127.0.0.1` (any `127.x.y.z`), `[::1]` or `localhost` (resolved per call, loopback answers only).
//! Refused: any other host, credentials, a path other than `/`, a query, a fragment, a scheme other than `http`
//! (so `https` too: the bridge speaks plain HTTP on loopback), a missing or zero port. Error texts never repeat
//! the value, which may hold credentials.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, ToSocketAddrs as _};
use std::time::Duration;

/// A validated gateway address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Address {
    /// The loopback host.
    pub host: Host,
    /// The TCP port, 1-65535.
    pub port: u16,
}

/// A loopback host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// An address in `127.0.0.0/8`.
    Ipv4(Ipv4Addr),
    /// `[::1]`.
    Ipv6Loopback,
    /// `localhost`, resolved at each call to its loopback addresses only.
    Localhost,
}

/// Parses a gateway address (design.md#environment).
///
/// ```
/// use fluxgit_mcp_sidecar::bridge::address::{parse, Host};
/// assert_eq!(parse("127.0.0.1:7777").map(|a| a.port), Ok(7777));
/// assert_eq!(parse("http://localhost:7777/").map(|a| a.host), Ok(Host::Localhost));
/// assert!(parse("example.com:80").is_err());
/// assert!(parse("https://127.0.0.1:1").is_err());
/// ```
///
/// # Errors
/// Why the address is refused, as a sentence fragment without the value (e.g. `credentials are not allowed`).
pub fn parse(value: &str) -> Result<Address, String> {
    if value.is_empty() {
        return Err("it is empty".to_owned());
    }
    let authority = match value.split_once("://") {
        Some((scheme, rest)) => {
            if !scheme.eq_ignore_ascii_case("http") {
                return Err(format!(
                    "scheme {scheme:?} is not allowed: only http:// (the bridge speaks plain HTTP on loopback)"
                ));
            }
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let (authority, tail) = rest.split_at(end);
            if tail.contains('?') {
                return Err("a query is not allowed".to_owned());
            }
            if tail.contains('#') {
                return Err("a fragment is not allowed".to_owned());
            }
            if !tail.is_empty() && tail != "/" {
                return Err("a path is not allowed (only a trailing /)".to_owned());
            }
            authority
        }
        None if value.contains(['/', '?', '#']) => {
            return Err("HOST:PORT takes no path, query or fragment (or write http://HOST:PORT)".to_owned());
        }
        None => value,
    };
    if authority.contains('@') {
        return Err("credentials are not allowed".to_owned());
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(bracketed) => {
            let (inner, after) = bracketed.split_once(']').ok_or("an IPv6 host needs a closing ]")?;
            let port = after.strip_prefix(':').ok_or("the port is missing")?;
            let ip: Ipv6Addr = inner.parse().map_err(|_| format!("[{inner}] is not an IPv6 address"))?;
            if !ip.is_loopback() {
                return Err(format!("host [{inner}] is not loopback (use 127.0.0.1, [::1] or localhost)"));
            }
            (Host::Ipv6Loopback, port)
        }
        None => {
            let (host, port) = authority.rsplit_once(':').ok_or("the port is missing")?;
            (parse_host(host)?, port)
        }
    };
    if port.is_empty() {
        return Err("the port is missing".to_owned());
    }
    let number = port.parse::<u16>().ok().filter(|number| *number > 0 && port.bytes().all(|b| b.is_ascii_digit()));
    let Some(port) = number else {
        return Err(format!("port {port:?} is not a number from 1 to 65535"));
    };
    Ok(Address { host, port })
}

fn parse_host(host: &str) -> Result<Host, String> {
    if host.eq_ignore_ascii_case("localhost") {
        return Ok(Host::Localhost);
    }
    match host.parse::<Ipv4Addr>() {
        Ok(ip) if ip.is_loopback() => Ok(Host::Ipv4(ip)),
        _ => Err(format!("host {host:?} is not loopback (use 127.0.0.1, [::1] or localhost)")),
    }
}

impl Address {
    /// The socket to connect to. `localhost` is resolved now and only loopback answers are used, so a hosts file
    /// cannot send proposals off the machine; when it names several (`::1` and `127.0.0.1`), the first that accepts
    /// a connection within `connect_timeout` is chosen.
    ///
    /// # Errors
    /// `localhost` does not resolve, or resolves to no loopback address.
    pub fn socket_addr(&self, connect_timeout: Duration) -> Result<SocketAddr, String> {
        match self.host {
            Host::Ipv4(ip) => Ok(SocketAddr::from((ip, self.port))),
            Host::Ipv6Loopback => Ok(SocketAddr::from((Ipv6Addr::LOCALHOST, self.port))),
            Host::Localhost => {
                let candidates: Vec<SocketAddr> = ("localhost", self.port)
                    .to_socket_addrs()
                    .map_err(|error| format!("localhost does not resolve: {error}"))?
                    .filter(|candidate| candidate.ip().is_loopback())
                    .collect();
                match candidates.as_slice() {
                    [] => Err("localhost resolves to no loopback address".to_owned()),
                    [only] => Ok(*only),
                    several => Ok(several
                        .iter()
                        .find(|candidate| TcpStream::connect_timeout(candidate, connect_timeout).is_ok())
                        .unwrap_or(&several[0])
                        .to_owned()),
                }
            }
        }
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.host {
            Host::Ipv4(ip) => write!(f, "{ip}:{}", self.port),
            Host::Ipv6Loopback => write!(f, "[::1]:{}", self.port),
            Host::Localhost => write!(f, "localhost:{}", self.port),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_forms_are_accepted() {
        let v4 = |a, b, c, d, port| Ok(Address { host: Host::Ipv4(Ipv4Addr::new(a, b, c, d)), port });
        assert_eq!(parse("127.0.0.1:7777"), v4(127, 0, 0, 1, 7777));
        assert_eq!(parse("127.1.2.3:1"), v4(127, 1, 2, 3, 1));
        assert_eq!(parse("http://127.0.0.1:65535"), v4(127, 0, 0, 1, 65535));
        assert_eq!(parse("HTTP://127.0.0.1:80/"), v4(127, 0, 0, 1, 80));
        assert_eq!(parse("[::1]:9"), Ok(Address { host: Host::Ipv6Loopback, port: 9 }));
        assert_eq!(parse("http://[::1]:9/"), Ok(Address { host: Host::Ipv6Loopback, port: 9 }));
        assert_eq!(parse("localhost:5"), Ok(Address { host: Host::Localhost, port: 5 }));
        assert_eq!(parse("http://LocalHost:5"), Ok(Address { host: Host::Localhost, port: 5 }));
    }

    #[test]
    fn everything_else_is_refused_with_a_reason() {
        let cases = [
            ("", "empty"),
            ("example.com:80", "not loopback"),
            ("10.0.0.1:80", "not loopback"),
            ("0.0.0.0:80", "not loopback"),
            ("[::2]:80", "not loopback"),
            ("[fe80::1]:80", "not loopback"),
            ("127.0.0.1", "port is missing"),
            ("127.0.0.1:", "port is missing"),
            ("[::1]", "port is missing"),
            ("http://127.0.0.1", "port is missing"),
            ("127.0.0.1:0", "1 to 65535"),
            ("127.0.0.1:65536", "1 to 65535"),
            ("127.0.0.1:+80", "1 to 65535"),
            ("https://127.0.0.1:1", "scheme \"https\""),
            ("ftp://127.0.0.1:1", "scheme \"ftp\""),
            ("http://user:pw@127.0.0.1:1", "credentials"),
            ("user@127.0.0.1:1", "credentials"),
            ("http://127.0.0.1:1/path", "path"),
            ("http://127.0.0.1:1//", "path"),
            ("http://127.0.0.1:1/?a=b", "query"),
            ("http://127.0.0.1:1#x", "fragment"),
            ("127.0.0.1:1/", "takes no path"),
            ("::1:80", "not loopback"),
        ];
        for (value, expected) in cases {
            let error = parse(value).expect_err(value);
            assert!(error.contains(expected), "{value:?}: {error}");
            assert!(!error.contains("pw"), "credentials never echoed: {error}");
        }
    }

    #[test]
    fn socket_addrs_are_loopback() {
        let v6 = Address { host: Host::Ipv6Loopback, port: 9 };
        assert_eq!(v6.socket_addr(Duration::from_millis(100)), Ok(SocketAddr::from((Ipv6Addr::LOCALHOST, 9))));
        assert_eq!(v6.to_string(), "[::1]:9");
        let localhost = Address { host: Host::Localhost, port: 9 };
        let resolved =
            localhost.socket_addr(Duration::from_millis(100)).expect("localhost resolves on the test machine");
        assert!(resolved.ip().is_loopback() && resolved.port() == 9);
    }
}

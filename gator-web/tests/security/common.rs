//! What the security tests share: the real `gator-web` binary on a free port against a real
//! redis-server, and raw HTTP/1.1 over TCP, so a test sees exactly what a client would
//! (timeouts, closed connections, the headers of every answer).

use gator_tests::RedisServer;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A token of the minimum length and more.
pub const TOKEN: &str = "a-token-for-the-security-tests";
/// How long a test waits for an answer that must come; a hang past it is the failure.
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(10);

/// The binary, listening, and the Redis it reads. Killed on drop.
pub struct Web {
    child: Option<Child>,
    /// `127.0.0.1:port` (or what `--bind` said), as bound.
    pub address: String,
    /// The Redis behind it (a test may pause it).
    pub redis: RedisServer,
}

impl Web {
    /// `gator-web --bind 127.0.0.1:0 --redis-url <a new redis> args...`, once it listens.
    pub fn start(args: &[&str]) -> Web {
        Web::start_with_env(args, &[])
    }

    /// As [`Web::start`], with environment variables set.
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Web {
        let redis = RedisServer::start_single();
        let bind: &[&str] = if args.contains(&"--bind") {
            &[]
        } else {
            &["--bind", "127.0.0.1:0"]
        };
        let args: Vec<&str> = bind.iter().chain(args).copied().collect();
        let (child, address) = spawn(&redis.url(), &args, env);
        Web {
            child: Some(child),
            address,
            redis,
        }
    }

    /// Kills the binary; what it wrote on stderr (its log).
    pub fn stop(mut self) -> String {
        let mut child = self.child.take().unwrap();
        let _ = child.kill();
        let _ = child.wait();
        let mut stderr = String::new();
        let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
        stderr
    }

    /// `GET path` with more header lines (each ending in `\r\n`); the whole answer.
    pub fn get(&self, path: &str, headers: &str) -> String {
        let host = format!("Host: {}\r\n", self.address);
        self.send(&format!(
            "GET {path} HTTP/1.1\r\n{host}{headers}Connection: close\r\n\r\n"
        ))
    }

    /// `GET path` with these header lines and no `Host` of ours (the test gives its own).
    pub fn get_as(&self, path: &str, headers: &str) -> String {
        self.send(&format!(
            "GET {path} HTTP/1.1\r\n{headers}Connection: close\r\n\r\n"
        ))
    }

    /// Sends `request` as it is; reads the answer to the end.
    pub fn send(&self, request: &str) -> String {
        let mut stream = self.connect();
        stream.write_all(request.as_bytes()).unwrap();
        read_all(&mut stream)
    }

    /// A new connection, with a read deadline.
    pub fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(&self.address).unwrap();
        stream.set_read_timeout(Some(ANSWER_DEADLINE)).unwrap();
        stream
    }

    /// A new connection from `source` (`127.0.0.2`: Linux routes all of 127/8 to loopback, so
    /// a test can be several client addresses), with a receive buffer of about `recv_buffer`
    /// bytes if given (set before connecting, so the window the server sees is small too),
    /// blocking, with a read deadline.
    pub async fn connect_from(&self, source: &str, recv_buffer: Option<u32>) -> TcpStream {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
        if let Some(bytes) = recv_buffer {
            socket.set_recv_buffer_size(bytes).unwrap();
        }
        let stream = socket.connect(self.address.parse().unwrap()).await.unwrap();
        let stream = stream.into_std().unwrap();
        stream.set_nonblocking(false).unwrap();
        stream.set_read_timeout(Some(ANSWER_DEADLINE)).unwrap();
        stream
    }

    /// The port the binary bound.
    pub fn port(&self) -> u16 {
        self.address.rsplit(':').next().unwrap().parse().unwrap()
    }
}

impl Drop for Web {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The binary with `args` against `redis_url`; its address once it listens.
fn spawn(redis_url: &str, args: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    let mut child = bare()
        .args(["--redis-url", redis_url])
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let address = line
        .trim()
        .strip_prefix("gator-web listening on http://")
        .and_then(|a| a.strip_suffix('/'))
        .unwrap_or_else(|| {
            let _ = child.kill();
            let mut stderr = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
            panic!("unexpected first line {line:?}; stderr: {stderr}")
        })
        .to_owned();
    (child, address)
}

/// The binary with none of the environment's gator-web settings.
pub fn bare() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gator-web"));
    for (name, _) in std::env::vars() {
        if name.starts_with("GATOR_WEB_") {
            command.env_remove(name);
        }
    }
    command
}

/// Reads until the server closes, the deadline passes, or the connection is reset.
pub fn read_all(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let mut buffer = [0; 8192];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buffer[..n]),
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

/// The status code of an answer (0 if there is none).
pub fn status(answer: &str) -> u16 {
    answer
        .strip_prefix("HTTP/1.")
        .and_then(|rest| rest.get(2..5))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

/// The value of a header of an answer, by its lowercase name.
pub fn header(answer: &str, name: &str) -> Option<String> {
    let head = answer.split("\r\n\r\n").next()?;
    head.lines().skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name)
            .then(|| value.trim().to_owned())
    })
}

/// The JSON body of an answer (`null` if it is not JSON).
pub fn json(answer: &str) -> Value {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    serde_json::from_str(body).unwrap_or(Value::Null)
}

/// `Authorization: Bearer` with [`TOKEN`], as a header line.
pub fn bearer() -> String {
    format!("Authorization: Bearer {TOKEN}\r\n")
}

/// `POST path` with a JSON body and more header lines; the whole answer.
pub fn post(web: &Web, path: &str, headers: &str, body: &str) -> String {
    web.send(&format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        web.address,
        body.len()
    ))
}

/// Pushes `payload` as another producer would (a raw RPUSH), and records its queue.
pub async fn push_raw(redis: &gator_tests::RedisServer, payload: &serde_json::Value) {
    let mut conn = redis.client().await;
    redis::cmd("RPUSH")
        .arg("gator:{web}:queue")
        .arg(payload.to_string())
        .query_async::<()>(&mut conn)
        .await
        .unwrap();
    redis.cli(&["SADD", "gator:queues", "web"]);
}

/// Waits until `web`'s dead set holds one job.
pub async fn dead_lettered(redis: &RedisServer) {
    gator_tests::wait_until(
        "the job to be dead-lettered",
        Duration::from_secs(15),
        || async { redis.cli(&["ZCARD", "gator:{web}:dead"]) == "1" },
    )
    .await;
}

/// The dead set of `web`, raw: each member as stored.
pub async fn dead_raw(redis: &RedisServer) -> Vec<String> {
    redis::cmd("ZRANGE")
        .arg("gator:{web}:dead")
        .arg(0)
        .arg(-1)
        .query_async(&mut redis.client().await)
        .await
        .unwrap()
}

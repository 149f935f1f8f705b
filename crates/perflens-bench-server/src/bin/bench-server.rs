//! The server that `perflens-bench-server` drives: a tokio TCP
//! request/response server shaped like a small cache (a Redis-like
//! server without the protocol's text). Each request is 16 bytes (an
//! operation, a key, a value), each answer 8; a connection is one task
//! that reads a request, runs it against a store behind a lock, counts it
//! on a stats task through a channel, and writes the answer. Six
//! functions are measured, three of them per request, as a user would
//! measure a server's handlers.
//!
//! Built once per mode by the driver, with the crate's features: none
//! (perflens off), `enabled`, `cpu`, `alloc`, `flow` (the lock and the
//! channel measured), or `hotpath` (the same functions under hotpath
//! 0.30.3's `measure` and `main`, perflens off). Prints its port on
//! stdout, then serves until SIGTERM (under perflens, the session ends
//! there and writes its report to stderr, as a user's server would).
//!
//! The runtime is tokio's multi-threaded one, one worker per core, with
//! 8 MiB worker stacks in every mode: hotpath's measured futures overflow
//! tokio's default 2 MiB on the first request.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

// The channel's ends: perflens's measured ones in the `flow` build.
#[cfg(feature = "flow")]
use perflens::flow::tokio::mpsc;
#[cfg(not(feature = "flow"))]
use tokio::sync::mpsc;

#[cfg(feature = "flow")]
type Lock<T> = perflens::sync::Mutex<T>;
#[cfg(not(feature = "flow"))]
type Lock<T> = std::sync::Mutex<T>;

type Store = Arc<Lock<HashMap<u32, u64>>>;

/// What the stats task is told of each request: its operation.
type Stat = u8;

const GET: u8 = 0;
const SET: u8 = 1;

fn new_store() -> Store {
    #[cfg(feature = "flow")]
    let lock = perflens::lock!(Lock::new(HashMap::new()), label = "store");
    #[cfg(not(feature = "flow"))]
    let lock = Lock::new(HashMap::new());
    Arc::new(lock)
}

fn stats_channel() -> (mpsc::Sender<Stat>, mpsc::Receiver<Stat>) {
    #[cfg(feature = "flow")]
    let ends = perflens::channel!(tokio::sync::mpsc::channel::<Stat>(1024), label = "stats");
    #[cfg(not(feature = "flow"))]
    let ends = tokio::sync::mpsc::channel::<Stat>(1024);
    ends
}

// Both install a global allocator: with every feature on (the
// workspace's checks, never a benchmark mode) perflens's is the one.
#[cfg_attr(all(feature = "hotpath", not(feature = "alloc")), hotpath::main)]
#[perflens::main]
fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(8 << 20)
        .build()
        .expect("runtime")
        .block_on(run());
}

/// Accepts connections and serves each on a task of its own, forever.
#[cfg_attr(feature = "hotpath", hotpath::measure)]
#[perflens::measure]
async fn run() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("local address").port();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{port}")
        .and_then(|_| out.flush())
        .expect("stdout");
    drop(out);
    let store = new_store();
    let (tx, rx) = stats_channel();
    tokio::spawn(stats(rx));
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            continue;
        };
        let _ = socket.set_nodelay(true);
        tokio::spawn(serve(socket, store.clone(), tx.clone()));
    }
}

/// Counts the requests by operation until every sender is gone.
#[cfg_attr(feature = "hotpath", hotpath::measure)]
#[perflens::measure]
async fn stats(mut rx: mpsc::Receiver<Stat>) -> [u64; 2] {
    let mut seen = [0u64; 2];
    while let Some(op) = rx.recv().await {
        seen[usize::from(op & 1)] += 1;
    }
    seen
}

/// One connection: requests in, answers out, until the client closes.
#[cfg_attr(feature = "hotpath", hotpath::measure)]
#[perflens::measure]
async fn serve(socket: TcpStream, store: Store, stats: mpsc::Sender<Stat>) {
    let (mut rd, mut wr) = socket.into_split();
    while let Some(request) = read_request(&mut rd).await {
        let answer = handle(&store, request);
        if stats.send(request.0).await.is_err() {
            return;
        }
        if write_answer(&mut wr, answer).await.is_err() {
            return;
        }
    }
}

/// The next request, or `None` at the end of the stream.
#[cfg_attr(feature = "hotpath", hotpath::measure)]
#[perflens::measure]
async fn read_request(rd: &mut OwnedReadHalf) -> Option<(u8, u32, u64)> {
    let mut buf = [0u8; 16];
    rd.read_exact(&mut buf).await.ok()?;
    let key = u32::from_le_bytes(buf[4..8].try_into().unwrap());
    let value = u64::from_le_bytes(buf[8..16].try_into().unwrap());
    Some((buf[0], key, value))
}

/// Runs one request against the store: a set answers the old value, a
/// get the current one (0: none).
#[cfg_attr(feature = "hotpath", hotpath::measure)]
#[perflens::measure]
fn handle(store: &Store, (op, key, value): (u8, u32, u64)) -> u64 {
    let mut map = store.lock().unwrap_or_else(|e| e.into_inner());
    match op {
        SET => map.insert(key, value).unwrap_or(0),
        GET => map.get(&key).copied().unwrap_or(0),
        _ => u64::MAX,
    }
}

#[cfg_attr(feature = "hotpath", hotpath::measure)]
#[perflens::measure]
async fn write_answer(wr: &mut OwnedWriteHalf, answer: u64) -> std::io::Result<()> {
    wr.write_all(&answer.to_le_bytes()).await
}

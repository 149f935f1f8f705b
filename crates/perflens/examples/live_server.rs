//! A small HTTP/1.1 server to watch live: `#[perflens::main(live = true)]`
//! publishes its profile for `perflens top` while it serves.
//!
//! ```sh
//! cargo run --release -p perflens --example live_server --features alloc,cpu -- 127.0.0.1:8080 &
//! wrk -t2 -c16 -d10s http://127.0.0.1:8080/items/42    # or: curl http://127.0.0.1:8080/items/42
//! perflens top                                         # the live view
//! curl http://127.0.0.1:8080/quit                      # ends it (its report is printed)
//! ```
//!
//! One thread per connection (keep-alive), `std` only: parse the request,
//! route it, render a page (allocating), write the response. `/slow`
//! sleeps 20 ms (time that is wall but not CPU), `/quit` stops the server.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};

static QUIT: AtomicBool = AtomicBool::new(false);
/// Where the server listens (to wake its accept loop on `/quit`).
static ADDR: std::sync::OnceLock<std::net::SocketAddr> = std::sync::OnceLock::new();

#[perflens::measure]
fn parse_request(reader: &mut BufReader<TcpStream>) -> Option<String> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    // Headers up to the blank line; bodies are not expected.
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 || header == "\r\n" || header == "\n" {
            break;
        }
    }
    line.split_whitespace().nth(1).map(str::to_string)
}

#[perflens::measure]
fn render_item(id: u64) -> String {
    // A page of a few KiB, built piece by piece.
    let mut page = String::from("<html><body><ul>");
    for i in 0..64 {
        page.push_str(&format!(
            "<li>item {id} line {i}: {}</li>",
            id.wrapping_mul(i + 1)
        ));
    }
    page.push_str("</ul></body></html>");
    page
}

#[perflens::measure]
fn checksum(body: &str) -> u64 {
    // CPU work per request.
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for _ in 0..8 {
        for b in body.bytes() {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

#[perflens::measure]
fn route(path: &str) -> (u16, String) {
    if let Some(id) = path.strip_prefix("/items/") {
        let id: u64 = id.parse().unwrap_or(0);
        let body = render_item(id);
        let sum = checksum(&body);
        (200, format!("{body}<!-- {sum:x} -->"))
    } else if path == "/slow" {
        std::thread::sleep(std::time::Duration::from_millis(20));
        (200, "slow".into())
    } else if path == "/quit" {
        QUIT.store(true, Ordering::SeqCst);
        // Wake the accept loop, which then sees QUIT.
        if let Some(addr) = ADDR.get() {
            let _ = TcpStream::connect(addr);
        }
        (200, "bye".into())
    } else {
        (404, "not found".into())
    }
}

#[perflens::measure]
fn handle_connection(stream: TcpStream) {
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut out = std::io::BufWriter::new(write_half);
    while let Some(path) = parse_request(&mut reader) {
        let (status, body) = route(&path);
        let reason = if status == 200 { "OK" } else { "Not Found" };
        let head = format!(
            "HTTP/1.1 {status} {reason}\r\ncontent-length: {}\r\ncontent-type: text/html\r\n\r\n",
            body.len()
        );
        if out.write_all(head.as_bytes()).is_err()
            || out.write_all(body.as_bytes()).is_err()
            || out.flush().is_err()
            || QUIT.load(Ordering::SeqCst)
        {
            break;
        }
    }
}

#[perflens::main(live = true)]
fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    let listener = TcpListener::bind(&addr).expect("bind");
    if let Ok(local) = listener.local_addr() {
        let _ = ADDR.set(local);
    }
    eprintln!("live_server: listening on http://{addr} (GET /items/N, /slow, /quit)");
    for stream in listener.incoming() {
        if QUIT.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        std::thread::spawn(move || handle_connection(stream));
        if QUIT.load(Ordering::SeqCst) {
            break;
        }
    }
}

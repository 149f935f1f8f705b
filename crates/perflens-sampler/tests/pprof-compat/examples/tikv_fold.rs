//! Shapes from tikv/tikv (components/server/src/status_server/profile.rs):
//! a report's thread names rewritten by a frames post processor
//! (`frames.thread_name = extract_thread_name(&frames.thread_name)`), and
//! its own folded-stack writer over `report.data`: thread name (or id),
//! frames root first, `Symbol`'s `Display`, the count.

use std::io::Write;

fn extract_thread_name(thread_name: &str) -> String {
    // "grpc-server-3" -> "grpc-server"
    match thread_name.rsplit_once('-') {
        Some((base, n)) if n.chars().all(|c| c.is_ascii_digit()) => base.to_string(),
        _ => thread_name.to_string(),
    }
}

fn fold<W: Write>(
    report: &pprof::Report,
    with_thread_name: bool,
    mut writer: W,
) -> std::io::Result<()> {
    for (key, value) in report.data.iter() {
        if with_thread_name {
            if !key.thread_name.is_empty() {
                write!(writer, "{};", key.thread_name)?;
            } else {
                write!(writer, "{:?};", key.thread_id)?;
            }
        }
        let names: Vec<String> = key
            .frames
            .iter()
            .rev()
            .flat_map(|frame| frame.iter().rev().map(|symbol| format!("{symbol}")))
            .collect();
        writeln!(writer, "{} {}", names.join(";"), value)?;
    }
    Ok(())
}

fn main() {
    let out = pprof_compat::out_dir();
    let guard = pprof::ProfilerGuard::new(1000).unwrap();
    let workers: Vec<_> = (0..2)
        .map(|i| {
            std::thread::Builder::new()
                .name(format!("grpc-server-{i}"))
                .spawn(|| pprof_compat::burn_cpu(200))
                .unwrap()
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let report = guard
        .report()
        .frames_post_processor(move |frames| {
            let name = extract_thread_name(&frames.thread_name);
            frames.thread_name = name;
        })
        .build()
        .unwrap();
    fold(
        &report,
        true,
        std::fs::File::create(out.join("folded.txt")).unwrap(),
    )
    .unwrap();
}

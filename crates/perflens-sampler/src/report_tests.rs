//! Tests of the pprof-rs report API on a made-up profile: the counts in
//! `data`, the `Debug` and `Display` lines, outputs that follow `data`,
//! and both codecs' messages.

use super::*;
use crate::profile::{ProfileTiming, SampleValue, ThreadProfile};
use crate::{CpuSource, Symbol};

fn sym(name: &str, file: Option<&str>, line: Option<u32>) -> Symbol {
    Symbol {
        name: name.into(),
        filename: file.map(str::to_string),
        lineno: line,
    }
}

fn frames(names: &[&str], thread: &str, tid: u64) -> Frames {
    Frames {
        frames: names
            .iter()
            .map(|n| vec![sym(n, Some("src/x.rs"), Some(7))])
            .collect(),
        addresses: (0..names.len() as u64).map(|i| 0x1000 + i).collect(),
        thread_name: thread.into(),
        thread_id: tid,
        context: 0,
        context_name: None,
    }
}

/// leaf `spin` under `main` (3 samples on thread "worker"), `io` under
/// `main` (1 sample on an unnamed thread 9).
fn profile() -> CpuProfile {
    let mut data = HashMap::new();
    let v = |s: u64| SampleValue {
        samples: s,
        cpu_ns: s * 1_000_000,
    };
    data.insert(frames(&["spin", "main"], "worker", 8), v(3));
    data.insert(frames(&["io", "main"], "", 9), v(1));
    let thread = |tid: u64, name: &str, samples: u64| ThreadProfile {
        tid,
        name: name.into(),
        source: CpuSource::Timer,
        signal: 0,
        kernel_included: true,
        samples,
        sampled_cpu_ns: samples * 1_000_000,
        kernel_ns: 0,
        cpu_ns: samples * 1_000_000,
        dropped: 0,
        truncated: 0,
        off_stack: 0,
        exited: false,
        moved_to_timer: false,
        nudged: 0,
    };
    CpuProfile {
        data,
        threads: vec![thread(8, "worker", 3), thread(9, "", 1)],
        timing: ProfileTiming {
            frequency: 1000,
            period_ns: 1_000_000,
            start_time: SystemTime::UNIX_EPOCH + Duration::from_secs(5),
            duration: Duration::from_millis(4),
        },
        sampler_cpu_ns: 0,
        handler_ns: 0,
        handler_calls: 0,
        handler_hist: Vec::new(),
        modules: Vec::new(),
    }
}

#[test]
fn data_counts_samples_per_stack_and_timing_is_the_sessions() {
    let r = Report::from_profile(&profile());
    assert_eq!(r.data.len(), 2);
    assert_eq!(r.data[&frames(&["spin", "main"], "worker", 8)], 3);
    assert_eq!(r.data[&frames(&["io", "main"], "", 9)], 1);
    assert_eq!(r.data.values().sum::<isize>(), 4);
    assert_eq!(r.timing.frequency, 1000);
    assert_eq!(
        r.timing.start_time,
        SystemTime::UNIX_EPOCH + Duration::from_secs(5)
    );
    assert_eq!(r.timing.duration, Duration::from_millis(4));
}

/// pprof-rs's lines, most samples first; an unnamed thread by its id.
#[test]
fn debug_prints_one_readable_line_per_stack() {
    let r = Report::from_profile(&profile());
    assert_eq!(
        format!("{r:?}"),
        "FRAME: spin -> FRAME: main -> THREAD: worker 3\n\
         FRAME: io -> FRAME: main -> THREAD: ThreadId(9) 1\n"
    );
}

#[test]
fn display_prints_folded_stacks_root_first() {
    let r = Report::from_profile(&profile());
    assert_eq!(r.to_string(), "ThreadId(9);main;io 1\nworker;main;spin 3\n");
}

#[test]
fn symbol_accessors_answer_as_pprof_rs_does() {
    let s = sym("a::b", Some("src/a.rs"), Some(12));
    assert_eq!(
        (s.name(), s.raw_name(), &*s.sys_name()),
        ("a::b".to_string(), &b"a::b"[..], "a::b")
    );
    assert_eq!(
        (&*s.filename(), s.lineno(), s.to_string()),
        ("src/a.rs", 12, "a::b".into())
    );
    let unknown = sym("?", None, None);
    assert_eq!((&*unknown.filename(), unknown.lineno()), ("Unknown", 0));
}

/// A stack the program removed from `data` is in no output.
#[test]
fn outputs_show_the_stacks_left_in_data() {
    let mut r = Report::from_profile(&profile());
    let mut svg = Vec::new();
    r.flamegraph(&mut svg).unwrap();
    let svg = String::from_utf8(svg).unwrap();
    assert!(svg.contains(">io (") && svg.contains(">spin ("), "{svg}");
    r.data.retain(|k, _| k.thread_id == 8);
    let mut svg = Vec::new();
    r.flamegraph(&mut svg).unwrap();
    let svg = String::from_utf8(svg).unwrap();
    assert!(!svg.contains(">io (") && svg.contains(">spin ("), "{svg}");
}

/// A report a program builds itself (pprof-rs's fields are public) has
/// the same outputs; each sample is one period of CPU time.
#[test]
fn a_report_built_from_its_fields_has_outputs() {
    let mut data = HashMap::new();
    data.insert(frames(&["leaf", "root"], "t", 1), 5);
    let timing = ReportTiming {
        frequency: 100,
        ..ReportTiming::default()
    };
    let r = Report { data, timing };
    let p = r.as_profile();
    assert_eq!(p.timing.period_ns, 10_000_000);
    assert_eq!(p.total_samples(), 5);
    assert_eq!(p.total_cpu_ns(), 50_000_000);
    assert_eq!(p.folded_lines(), ["t;root;leaf 50000"]);
    let mut gz = Vec::new();
    r.write_pprof(&mut gz).unwrap();
    assert_eq!(&gz[..2], &[0x1f, 0x8b]);
}

#[test]
fn user_flamegraph_options_are_used() {
    let r = Report::from_profile(&profile());
    let mut opts = crate::flamegraph::Options::default();
    opts.title = "my benchmark".into();
    let mut svg = Vec::new();
    r.flamegraph_with_options(&mut svg, &mut opts).unwrap();
    assert!(String::from_utf8(svg).unwrap().contains(">my benchmark<"));
}

/// The strings a decoded profile's sample at `i` names: its functions
/// leaf first, then its `thread` label.
#[cfg(feature = "prost-codec")]
fn prost_stack(p: &crate::codecs::prost_profile::Profile, i: usize) -> Vec<String> {
    let s = &p.sample[i];
    let st = |i: i64| p.string_table[i as usize].clone();
    let mut out: Vec<String> = (s.location_id.iter())
        .map(|id| {
            let loc = p.location.iter().find(|l| l.id == *id).unwrap();
            let f = p
                .function
                .iter()
                .find(|f| f.id == loc.line[0].function_id)
                .unwrap();
            st(f.name)
        })
        .collect();
    let thread = s.label.iter().find(|l| st(l.key) == "thread").unwrap();
    out.push(st(thread.str));
    out
}

#[cfg(feature = "prost-codec")]
#[test]
fn prost_profile_holds_the_report_and_round_trips() {
    use crate::codecs::prost_profile::{Message, Profile};
    let p = crate::codecs::to_prost(&profile()).unwrap();
    let st = |i: i64| p.string_table[i as usize].as_str();
    let types: Vec<(&str, &str)> = p
        .sample_type
        .iter()
        .map(|t| (st(t.ty), st(t.unit)))
        .collect();
    assert_eq!(types, [("samples", "count"), ("cpu", "nanoseconds")]);
    // Most CPU first.
    assert_eq!(p.sample[0].value, [3, 3_000_000]);
    assert_eq!(prost_stack(&p, 0), ["spin", "main", "worker"]);
    assert_eq!(p.sample[1].value, [1, 1_000_000]);
    assert_eq!(prost_stack(&p, 1), ["io", "main", ""]);
    assert_eq!(p.period, 1_000_000);
    assert_eq!(p.time_nanos, 5_000_000_000);
    let bytes = p.encode_to_vec();
    assert_eq!(Profile::decode(bytes.as_slice()).unwrap(), p);
    assert_eq!(bytes.len(), p.encoded_len());
}

#[cfg(feature = "protobuf-codec")]
#[test]
fn protobuf_profile_holds_the_report_and_round_trips() {
    use crate::codecs::protobuf_profile::{Message, Profile};
    let p = crate::codecs::to_protobuf(&profile()).unwrap();
    let st = |i: i64| p.string_table[i as usize].as_str();
    let types: Vec<(&str, &str)> = (p.sample_type.iter())
        .map(|t| (st(t.type_), st(t.unit)))
        .collect();
    assert_eq!(types, [("samples", "count"), ("cpu", "nanoseconds")]);
    assert_eq!(p.sample[0].value, [3, 3_000_000]);
    assert_eq!(p.sample[1].value, [1, 1_000_000]);
    let leaf = |i: usize| {
        let loc = (p.location.iter())
            .find(|l| l.id == p.sample[i].location_id[0])
            .unwrap();
        let f = (p.function.iter())
            .find(|f| f.id == loc.line[0].function_id)
            .unwrap();
        st(f.name)
    };
    assert_eq!((leaf(0), leaf(1)), ("spin", "io"));
    assert_eq!(p.period_type.type_, p.sample_type[1].type_);
    let bytes = p.write_to_bytes().unwrap();
    assert_eq!(Profile::parse_from_bytes(&bytes).unwrap(), p);
    let mut v = Vec::new();
    p.write_to_vec(&mut v).unwrap();
    assert_eq!(v, bytes);
}

/// Both codecs read the same profile from what perflens writes: their
/// encodings of it are the same bytes, and decode to it again.
#[cfg(all(feature = "prost-codec", feature = "protobuf-codec"))]
#[test]
fn both_codecs_encode_the_same_bytes() {
    use prost::Message as _;
    use protobuf::Message as _;
    let p = profile();
    let prost = crate::codecs::to_prost(&p).unwrap();
    let protobuf = crate::codecs::to_protobuf(&p).unwrap();
    let bytes = prost.encode_to_vec();
    assert_eq!(protobuf.write_to_bytes().unwrap(), bytes);
    let written = p.pprof_proto();
    let again = crate::codecs::prost_profile::Profile::decode(written.as_slice()).unwrap();
    assert_eq!(again, prost);
}

/// What pprof-rs's users rely on to keep a guard in a static `Mutex` or
/// move a report to another thread.
#[test]
fn guards_and_reports_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<crate::ProfilerGuard<'static>>();
    send_sync::<crate::ProfilerGuardBuilder>();
    send_sync::<Report>();
    send_sync::<UnresolvedReport>();
    send_sync::<ReportBuilder<'static>>();
}

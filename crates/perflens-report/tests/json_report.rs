//! The JSON report: round trip, conformance to the shipped JSON Schema,
//! and clear errors (never panics) on bad input.

mod common;

use common::schema::{documented_example, pattern_matches, report_schema, validate};
use common::{SnapBuilder, alloc_fixture, fixture, json, waits_fixture};
use perflens_core::snapshot::Mode;
use perflens_report::{Report, ReportError, ReportOptions};
use serde_json::Value;

fn fixture_report() -> Report {
    let options = ReportOptions {
        percentiles: vec![50.0, 90.0, 99.9],
        ..Default::default()
    };
    Report::from_snapshot(&fixture(), &options)
}

/// Reports in every mode, to validate and round-trip.
fn all_reports() -> Vec<Report> {
    let mut out = vec![fixture_report()];
    for mode in [Mode::Count, Mode::Sampled { every: 8 }] {
        let mut b = SnapBuilder::new(mode);
        let t = b.thread("main");
        b.sampled_node(t, &["a"], 80, 10, 1_000, 500);
        b.sampled_node(t, &["a", "b"], 80, 10, 500, 500);
        out.push(Report::from_snapshot(&b.build(), &ReportOptions::default()));
    }
    out.push(Report::from_snapshot(
        &alloc_fixture(1),
        &ReportOptions::default(),
    ));
    // With a Waits section.
    let waits = Report::from_snapshot(&waits_fixture(Mode::Timed), &ReportOptions::default());
    assert_eq!(waits.waits.len(), 3);
    out.push(waits);
    // With a Locks section.
    let mut locks = fixture_report();
    locks.locks.push(perflens_report::LockRow {
        name: "jobs".into(),
        acquisitions: 10,
        shared: 4,
        contended: 2,
        max_waiters: 2,
        hold_count: 10,
        hold_ns: 5_000,
        hold_mean_ns: 500,
        hold_p50_ns: 400,
        hold_p99_ns: 1_200,
        hold_max_ns: 1_200,
        wait_count: 2,
        wait_ns: 3_000,
        wait_mean_ns: 1_500,
        wait_p50_ns: 1_000,
        wait_p99_ns: 2_000,
        wait_max_ns: 2_000,
    });
    out.push(locks);
    // With a Channels section: one bounded, one unbounded (capacity null),
    // one whose capacity is not known (null, capacity_known false).
    let mut channels = fixture_report();
    let jobs = perflens_report::ChannelRow {
        name: "jobs".into(),
        created: 1,
        senders: 2,
        receivers: 1,
        sent: 100,
        received: 97,
        dropped: 0,
        queued: 3,
        max_queued: 8,
        capacity: Some(8),
        capacity_known: true,
        send_wait_ns: 12_000,
        recv_wait_ns: 4_000,
        latency_count: 97,
        latency_mean_ns: 2_500,
        latency_p50_ns: 2_000,
        latency_p99_ns: 9_000,
        latency_max_ns: 9_500,
    };
    let unbounded = perflens_report::ChannelRow {
        name: "src/main.rs:10:5".into(),
        capacity: None,
        ..jobs.clone()
    };
    // Made before the session: none made in it, its capacity not known.
    let unknown = perflens_report::ChannelRow {
        name: "src/main.rs:20:5".into(),
        created: 0,
        capacity: None,
        capacity_known: false,
        ..jobs.clone()
    };
    channels.channels.extend([jobs, unbounded, unknown]);
    out.push(channels);
    // With Streams and Futures sections.
    let mut flows = fixture_report();
    flows.streams.push(perflens_report::StreamRow {
        name: "items".into(),
        created: 2,
        items: 4,
        polls: 9,
        pending_polls: 4,
        ended: 1,
        dropped: 1,
        first_item_count: 2,
        first_item_mean_ns: 5_000,
        interval_count: 2,
        interval_mean_ns: 6_000,
        interval_p50_ns: 6_000,
        interval_p99_ns: 7_000,
        interval_max_ns: 7_000,
    });
    flows.futures.push(perflens_report::FutureRow {
        name: "work".into(),
        completed: 1,
        cancelled: 1,
        polls: 4,
        busy_ns: 8_000,
        wait_ns: 10_000,
        wall_ns: 18_000,
        wall_p50_ns: 16_000,
        wall_p99_ns: 16_000,
    });
    out.push(flows);
    out
}

#[test]
fn round_trip_is_lossless() {
    for report in all_reports() {
        let text = json(&report);
        assert!(text.ends_with("}\n"));
        let back = Report::from_json_reader(text.as_bytes()).unwrap();
        assert_eq!(back, report);
        assert_eq!(json(&back), text);
    }
}

#[test]
fn every_report_conforms_to_the_schema_file() {
    let schema = report_schema();
    for report in all_reports() {
        let doc: Value = serde_json::from_str(&json(&report)).unwrap();
        let errors = validate(&schema, &doc, true);
        assert!(errors.is_empty(), "{errors:#?}");
    }
}

#[test]
fn the_validator_catches_what_the_schema_forbids() {
    let schema = report_schema();
    let good: Value = serde_json::from_str(&json(&fixture_report())).unwrap();
    let broken = |edit: &dyn Fn(&mut Value)| {
        let mut doc = good.clone();
        edit(&mut doc);
        validate(&schema, &doc, false)
    };
    assert_eq!(
        broken(&|d| d["schema"] = "perflens.report/2".into()).len(),
        1
    );
    assert_eq!(
        broken(&|d| d["functions"][0]["total_ns"] = 1.5.into()).len(),
        1
    );
    assert_eq!(
        broken(&|d| d["functions"][0]["calls"] = (-1).into()).len(),
        1
    );
    assert_eq!(broken(&|d| d["paths"][0]["id"] = "12".into()).len(), 1);
    assert_eq!(
        broken(&|d| d["paths"][0]["segments"][0]["name"] = Value::Null).len(),
        1
    );
    let async_row = |d: &mut Value| {
        let f = d["functions"].as_array_mut().unwrap();
        f.iter_mut()
            .find(|f| f["kind"] == "async")
            .unwrap()
            .as_object_mut()
            .unwrap()
            .remove("polls");
    };
    assert_eq!(broken(&async_row).len(), 1, "async rows require polls");
    // Unknown fields are allowed (additive changes keep /1), except in
    // the strict check of our own output.
    let mut doc = good.clone();
    doc["future_field"] = 1.into();
    assert!(validate(&schema, &doc, false).is_empty());
    assert_eq!(validate(&schema, &doc, true).len(), 1);
    assert!(pattern_matches("^p[0-9.]+$", "p99.9") && !pattern_matches("^p[0-9.]+$", "x99"));
}

#[test]
fn required_fields_have_the_right_json_types() {
    let doc: Value = serde_json::from_str(&json(&fixture_report())).unwrap();
    assert_eq!(doc["schema"], "perflens.report/1");
    assert_eq!(doc["mode"], "timed");
    assert_eq!(doc["clock"], "tsc");
    assert_eq!(doc["elapsed_ns"], 2_500_000_000u64);
    assert_eq!(doc["percentiles"], serde_json::json!([50.0, 90.0, 99.9]));
    let parse = doc["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "app::parse");
    let parse = parse.unwrap();
    for key in [
        "calls", "total_ns", "self_ns", "avg_ns", "p50_ns", "p95_ns", "p99_ns",
    ] {
        assert!(parse[key].is_u64(), "{key} is {}", parse[key]);
    }
    assert_eq!(parse["kind"], "sync");
    assert_eq!(parse["sampled"], false);
    assert!(
        parse.get("busy_ns").is_none(),
        "async fields only on async rows"
    );
    let keys: Vec<&String> = parse["percentiles"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["p50", "p90", "p99.9"]);
    let fetch = doc["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "async")
        .unwrap();
    assert_eq!(
        (&fetch["busy_ns"], &fetch["wait_ns"]),
        (&80_000_000.into(), &820_000_000.into())
    );
    assert_eq!(
        (&fetch["polls"], &fetch["cancelled"]),
        (&190.into(), &2.into())
    );
    let dropped = &doc["dropped"];
    assert_eq!(
        (&dropped["overflow_calls"], &dropped["dropped_frames"]),
        (&7.into(), &3.into())
    );
    assert_eq!(doc["threads"][2]["name"], Value::Null);
    assert_eq!(doc["threads"][2]["exited"], true);
}

#[test]
fn path_ids_are_16_hex_digits_and_keep_all_64_bits() {
    let report = fixture_report();
    let id = report.paths[0].id;
    assert!(
        id > 1 << 53,
        "the fixture's ids exercise the precision problem"
    );
    let doc: Value = serde_json::from_str(&json(&report)).unwrap();
    assert_eq!(doc["paths"][0]["id"], format!("{id:016x}"));
    let mut small = report.clone();
    small.paths[0].id = 0xab;
    let text = json(&small);
    assert!(text.contains("\"id\": \"00000000000000ab\""));
    assert_eq!(Report::from_json_str(&text).unwrap().paths[0].id, 0xab);
}

#[test]
fn every_truncation_is_an_error_not_a_panic() {
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    b.node(t, &["a"], 2, 20, 10);
    b.node(t, &["a", "b"], 2, 10, 10);
    let text = json(&Report::from_snapshot(
        &b.build(),
        &ReportOptions::default(),
    ));
    let end = text.trim_end().len();
    for cut in 0..end {
        match Report::from_json_str(&text[..cut]) {
            Err(ReportError::Truncated { .. } | ReportError::Empty) => {}
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
    let err = Report::from_json_str(&text[..end / 2])
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("The report ends early (line "), "{err}");
    assert!(Report::from_json_str(&text[..end]).is_ok());
}

#[test]
fn bad_input_gets_a_clear_error() {
    let good = json(&fixture_report());
    let msg = |text: &str| Report::from_json_str(text).unwrap_err().to_string();

    assert!(msg("").starts_with("The report is empty;"));
    assert!(msg("{\"schema\": 1,}").starts_with("The report is not valid JSON (trailing comma"));
    assert!(msg("[1, 2]").starts_with("The JSON has no \"schema\" string"));
    let v2 = good.replace("perflens.report/1", "perflens.report/2");
    assert!(
        matches!(Report::from_json_str(&v2), Err(ReportError::UnsupportedSchema { found }) if found == "perflens.report/2")
    );
    assert!(msg(&v2).contains("this perflens reads only \"perflens.report/1\""));
    let missing = good.replacen("\"avg_ns\"", "\"avg\"", 1);
    let err = msg(&missing);
    assert!(
        err.starts_with("The report is not a valid perflens.report/1 document"),
        "{err}"
    );
    assert!(err.contains("missing field `avg_ns`"), "{err}");
    let bad_id = good.replacen("\"id\": \"", "\"id\": \"zz", 1);
    assert!(msg(&bad_id).contains("is not 16 hexadecimal digits"));
    // Additive fields keep /1: a reader ignores what it does not know.
    let extra = good.replacen('{', "{\n  \"added_later\": {\"x\": [1]},", 1);
    assert_eq!(Report::from_json_str(&extra).unwrap(), fixture_report());
}

#[test]
fn io_errors_are_reported() {
    struct Failing;
    impl std::io::Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk on fire"))
        }
    }
    let err = Report::from_json_reader(std::io::BufReader::new(Failing)).unwrap_err();
    assert!(matches!(err, ReportError::Io(_)));
    assert_eq!(err.to_string(), "Could not read the report: disk on fire.");
}

#[test]
fn the_documented_example_reads_back_and_conforms() {
    let example = &documented_example(1);
    let value: Value = serde_json::from_str(example).unwrap();
    assert_eq!(
        validate(&report_schema(), &value, true),
        Vec::<String>::new()
    );
    let report = Report::from_json_str(example).unwrap();
    let fetch = report.function("app::fetch").unwrap();
    assert_eq!(fetch.wait_ns, Some(fetch.total_ns - fetch.busy_ns.unwrap()));
    let fetch = report.path(&["app::main", "app::fetch"]).unwrap();
    assert_eq!(fetch.id, 0xa3c9_1e0f_5b7d_2486);
    // `app::main` spent 200 ms itself, `app::fetch` 50 ms: by Self, the
    // path ending at `main` comes first.
    assert_eq!(report.paths[0].frames, ["app::main"]);
}

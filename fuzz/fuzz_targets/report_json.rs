//! The JSON report reader on arbitrary bytes: it returns a report or an
//! error, never panics; a report it accepts writes back out, reads back
//! equal, and draws as a table.
#![no_main]

use libfuzzer_sys::fuzz_target;
use perflens_report::{Report, write_json, write_table};

fuzz_target!(|data: &[u8]| {
    let Ok(report) = Report::from_json_reader(data) else {
        return;
    };
    let mut json = Vec::new();
    write_json(&report, &mut json).expect("write to a Vec");
    let back = Report::from_json_reader(&json[..]).expect("a written report reads back");
    assert_eq!(back, report, "the report changed in a round trip");
    write_table(&report, &mut std::io::sink()).expect("write to a sink");
});

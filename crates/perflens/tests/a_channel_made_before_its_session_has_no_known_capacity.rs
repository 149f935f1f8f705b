//! A channel made while no session ran, then used in one: the report
//! holds its messages but not its making, so its capacity is not known.
//! The row says so (`capacity_known` false, `-` in the table), never
//! `unbounded` (issue 24, point 2); a channel made in the session keeps
//! its capacity, bounded or unbounded.
#![cfg(all(feature = "enabled", feature = "flow-crossbeam"))]

use perflens::{ChannelRow, Report, Session};

fn row<'a>(report: &'a Report, name: &str) -> &'a ChannelRow {
    (report.channels.iter())
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no channel {name}: {:?}", report.channels))
}

/// The Capacity cell of channel `name` in the terminal table.
fn capacity_cell(table: &str, name: &str) -> String {
    let mut lines = table.lines();
    let header = lines
        .find(|l| l.starts_with("Channel "))
        .unwrap_or_else(|| panic!("no Channels table:\n{table}"));
    // Columns are right-aligned under their headers: the cell ends where
    // its header does.
    let end = header.find("Capacity").unwrap() + "Capacity".len();
    let start = header[..end - "Capacity".len()].trim_end().len();
    let line = lines
        .find(|l| l.starts_with(name))
        .unwrap_or_else(|| panic!("no row {name}:\n{table}"));
    line[start..end].trim().to_string()
}

#[test]
fn a_channel_made_before_its_session_shows_its_capacity_as_not_known() {
    // No session: its making is not recorded.
    let (tx, rx) = perflens::channel!(crossbeam_channel::bounded::<u32>(4), label = "before");
    let session = Session::builder().ignore_env().start().expect("a session");
    let (btx, brx) = perflens::channel!(crossbeam_channel::bounded::<u32>(4), label = "bounded");
    let (utx, urx) = perflens::channel!(crossbeam_channel::unbounded::<u32>(), label = "unbounded");
    for i in 0..3 {
        tx.send(i).unwrap();
        btx.send(i).unwrap();
        utx.send(i).unwrap();
    }
    for _ in 0..2 {
        rx.recv().unwrap();
        brx.recv().unwrap();
        urx.recv().unwrap();
    }
    let report = session.finish();

    let before = row(&report, "before");
    assert_eq!(
        (before.created, before.sent, before.received, before.queued),
        (0, 3, 2, 1),
        "its messages are counted, its making is not"
    );
    assert!(!before.capacity_known, "{before:?}");
    assert_eq!(before.capacity, None);
    let bounded = row(&report, "bounded");
    assert_eq!((bounded.created, bounded.sent, bounded.received), (1, 3, 2));
    assert!(bounded.capacity_known);
    assert_eq!(bounded.capacity, Some(4));
    let unbounded = row(&report, "unbounded");
    assert_eq!((unbounded.created, unbounded.sent), (1, 3));
    assert!(unbounded.capacity_known);
    assert_eq!(unbounded.capacity, None);

    // The JSON says it: null with capacity_known false, apart from the
    // unbounded channel's null.
    let mut json = Vec::new();
    perflens::write_json(&report, &mut json).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let field = |name: &str, f: &str| {
        (json["channels"].as_array().unwrap().iter())
            .find(|c| c["name"] == name)
            .unwrap()[f]
            .clone()
    };
    assert_eq!(field("before", "capacity"), serde_json::Value::Null);
    assert_eq!(field("before", "capacity_known"), false);
    assert_eq!(field("unbounded", "capacity"), serde_json::Value::Null);
    assert_eq!(field("unbounded", "capacity_known"), true);
    assert_eq!(field("bounded", "capacity"), 4);
    assert_eq!(
        Report::from_json_str(&json.to_string()).unwrap(),
        report,
        "read back as written"
    );

    let mut table = Vec::new();
    perflens::write_table(&report, &mut table).unwrap();
    let table = String::from_utf8(table).unwrap();
    assert_eq!(capacity_cell(&table, "before"), "-", "{table}");
    assert_eq!(capacity_cell(&table, "bounded"), "4", "{table}");
    assert_eq!(capacity_cell(&table, "unbounded"), "unbounded", "{table}");
}

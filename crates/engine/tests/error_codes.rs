//! Error codes are typed from the engine to the UI: each code's wire name is its `as_str`, it
//! reads back as itself, a code from a newer version reads as `internal`, and the UI's
//! `ErrorCode` type in ui/src/ipc.ts lists every one (so a new code cannot reach the window
//! untyped).

use finishline_engine::event::EngineEvent;
use finishline_engine::ErrorCode;

#[test]
fn every_code_travels_by_its_name_and_reads_back_as_itself() {
    for code in ErrorCode::ALL {
        let wire = serde_json::to_value(code).unwrap();
        assert_eq!(wire, serde_json::Value::String(code.as_str().to_string()));
        assert_eq!(serde_json::from_value::<ErrorCode>(wire).unwrap(), *code);
    }
    let event = EngineEvent::Error { code: ErrorCode::Checkpoints, message: "off".into() };
    let json = serde_json::to_value(&event).unwrap();
    assert_eq!(json["code"], "checkpoints", "an error event carries the same names as before it was typed");
    assert_eq!(serde_json::from_value::<EngineEvent>(json).unwrap(), event);
}

#[test]
fn a_code_written_by_a_newer_version_reads_as_internal() {
    let old: EngineEvent = serde_json::from_value(serde_json::json!({"type": "error", "code": "something_new", "message": "m"})).unwrap();
    assert_eq!(old, EngineEvent::Error { code: ErrorCode::Internal, message: "m".into() });
}

#[test]
fn the_windows_error_code_type_lists_every_code() {
    let ipc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../ui/src/ipc.ts")).unwrap();
    for code in ErrorCode::ALL {
        assert!(ipc.contains(&format!("| \"{}\"", code.as_str())), "ui/src/ipc.ts's ErrorCode lacks \"{}\"", code.as_str());
    }
}

//! The pprof `profile.proto` messages as pprof-rs 0.15 exposes them in
//! `pprof::protos`, for [`Report::pprof`](crate::Report::pprof): prost
//! structs (feature `prost-codec`) or rust-protobuf messages generated at
//! build time (feature `protobuf-codec`). With both, rust-protobuf's are
//! [`protos`](crate::protos), as in pprof-rs.
//!
//! Both are decoded from the bytes of [`CpuProfile::pprof_proto`], the one
//! writer of the profile, so that the codecs' messages and the gzipped
//! file perflens writes always hold the same profile.

use crate::{CpuProfile, SamplerError};

/// The prost messages (field numbers and types of `profile.proto`; field
/// names as prost 0.12 names them, `ValueType::ty` for `type`).
#[cfg(feature = "prost-codec")]
#[allow(missing_docs)]
#[cfg_attr(feature = "protobuf-codec", allow(dead_code))]
pub mod prost_profile {
    pub use prost::Message;

    /// A profile: its sample types, samples, and the tables they index.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "3")]
        pub mapping: Vec<Mapping>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(int64, tag = "7")]
        pub drop_frames: i64,
        #[prost(int64, tag = "8")]
        pub keep_frames: i64,
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        #[prost(int64, tag = "12")]
        pub period: i64,
        #[prost(int64, repeated, tag = "13")]
        pub comment: Vec<i64>,
        #[prost(int64, tag = "14")]
        pub default_sample_type: i64,
    }

    /// A value's type and unit (string table indices).
    #[derive(Clone, Copy, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub ty: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    /// One stack (leaf first) and its values.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
        #[prost(message, repeated, tag = "3")]
        pub label: Vec<Label>,
    }

    /// A sample's label: a string (`str`) or a number (`num`).
    #[derive(Clone, Copy, PartialEq, prost::Message)]
    pub struct Label {
        #[prost(int64, tag = "1")]
        pub key: i64,
        #[prost(int64, tag = "2")]
        pub str: i64,
        #[prost(int64, tag = "3")]
        pub num: i64,
        #[prost(int64, tag = "4")]
        pub num_unit: i64,
    }

    /// profile.proto's name for [`ObjectMapping`].
    pub use self::ObjectMapping as Mapping;

    /// A loaded object's address range (profile.proto's `Mapping`, under
    /// its own name in this workspace, where a `Mapping` is perflens-live's
    /// view of a session's file).
    #[derive(Clone, Copy, PartialEq, prost::Message)]
    pub struct ObjectMapping {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub memory_start: u64,
        #[prost(uint64, tag = "3")]
        pub memory_limit: u64,
        #[prost(uint64, tag = "4")]
        pub file_offset: u64,
        #[prost(int64, tag = "5")]
        pub filename: i64,
        #[prost(int64, tag = "6")]
        pub build_id: i64,
        #[prost(bool, tag = "7")]
        pub has_functions: bool,
        #[prost(bool, tag = "8")]
        pub has_filenames: bool,
        #[prost(bool, tag = "9")]
        pub has_line_numbers: bool,
        #[prost(bool, tag = "10")]
        pub has_inline_frames: bool,
    }

    /// An address and the (inlined) functions at it, innermost first.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub mapping_id: u64,
        #[prost(uint64, tag = "3")]
        pub address: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
        #[prost(bool, tag = "5")]
        pub is_folded: bool,
    }

    /// A function and a line in it.
    #[derive(Clone, Copy, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        #[prost(int64, tag = "2")]
        pub line: i64,
    }

    /// A function's names and file (string table indices).
    #[derive(Clone, Copy, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        #[prost(int64, tag = "4")]
        pub filename: i64,
        #[prost(int64, tag = "5")]
        pub start_line: i64,
    }
}

/// The rust-protobuf messages, generated by build.rs from
/// `proto/profile.proto` (`profile::Profile`, also here as `Profile`).
#[cfg(feature = "protobuf-codec")]
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod protobuf_profile {
    pub use protobuf::Message;

    include!(concat!(env!("OUT_DIR"), "/mod.rs"));

    pub use self::profile::*;
}

fn invalid(codec: &str, e: impl std::fmt::Display) -> SamplerError {
    SamplerError::Io(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("{codec} cannot decode the profile: {e}"),
    ))
}

/// `profile` as prost's `Profile`.
#[cfg(feature = "prost-codec")]
#[cfg_attr(feature = "protobuf-codec", allow(dead_code))]
pub(crate) fn to_prost(profile: &CpuProfile) -> Result<prost_profile::Profile, SamplerError> {
    use prost::Message;
    prost_profile::Profile::decode(profile.pprof_proto().as_slice())
        .map_err(|e| invalid("prost", e))
}

/// `profile` as rust-protobuf's `Profile`.
#[cfg(feature = "protobuf-codec")]
pub(crate) fn to_protobuf(profile: &CpuProfile) -> Result<protobuf_profile::Profile, SamplerError> {
    use protobuf::Message;
    protobuf_profile::Profile::parse_from_bytes(&profile.pprof_proto())
        .map_err(|e| invalid("rust-protobuf", e))
}

/// `profile` as [`protos::Profile`](crate::protos::Profile).
#[cfg(feature = "protobuf-codec")]
pub(crate) fn to_protos(profile: &CpuProfile) -> Result<protobuf_profile::Profile, SamplerError> {
    to_protobuf(profile)
}

/// `profile` as [`protos::Profile`](crate::protos::Profile).
#[cfg(all(feature = "prost-codec", not(feature = "protobuf-codec")))]
pub(crate) fn to_protos(profile: &CpuProfile) -> Result<prost_profile::Profile, SamplerError> {
    to_prost(profile)
}

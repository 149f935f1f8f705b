//! With the `protobuf-codec` feature, generates the rust-protobuf messages
//! of `proto/profile.proto` into `OUT_DIR` (protobuf-codegen's pure-Rust
//! parser: no `protoc` needed). Without it, does nothing.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    #[cfg(feature = "protobuf-codec")]
    {
        println!("cargo::rerun-if-changed=proto/profile.proto");
        let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
        protobuf_codegen::Codegen::new()
            .pure()
            .includes(["proto"])
            .input("proto/profile.proto")
            .out_dir(&out)
            .run_from_script();
    }
}

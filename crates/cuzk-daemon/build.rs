//! Generates the `cuzk.v1` server and client code from `proto/cuzk/v1/proving.proto`
//! (Curio's contract) and `proto/cuzk/v1/cuzk_local.proto` (cuzk's own RPCs).
//! protox compiles the file in Rust, so building needs no `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Curio's contract, and cuzk's own service beside it (same package).
    let protos = [
        "proto/cuzk/v1/proving.proto",
        "proto/cuzk/v1/cuzk_local.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let descriptors = protox::compile(protos, ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}

//! Reads this build's kernel fatbins as opening a device does (the search
//! path of `cuzk_cuda::kernels`, each stamp against the sources this build
//! was compiled with, each fatbin against its stamp) and lists them; needs
//! no GPU or driver. Exits with status 1, naming the problem, when the
//! production units are not all present and current.
//!
//! `cargo run -p cuzk-cuda --example kernels` (after `cargo xtask kernels`,
//! or with `--features build-kernels`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let k = match cuzk_cuda::kernels::load() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    println!("build {}", k.build());
    println!("archs {}", k.archs());
    println!("dir {}", k.dir().display());
    for f in k.fatbins() {
        println!("{:?} kernels/{} {} bytes", f.set, f.unit, f.bytes.len());
    }
    for unit in cuzk_cuda::kernels::left_out() {
        println!("left out {unit}");
    }
    ExitCode::SUCCESS
}

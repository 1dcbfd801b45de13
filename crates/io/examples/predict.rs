//! Predicts cold latency of our walk and pgvector's on simulated disks (see the crate's
//! README). `cargo run --release -p vector-io --example predict -- --help`
fn main() {
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
    let path =
        std::path::Path::new(&target).join("vector-io-sim/graph-100000x768-m16-ef64-seed42.bin");
    let params = vector_hnsw::GraphParams {
        m: 16,
        ef_construction: 64,
    };
    let t = std::time::Instant::now();
    let (_, g) = vector_io::sim::cache::cached_graph(&path, 100_000, 768, &params, 42).unwrap();
    eprintln!("graph: {} elements in {:?}", g.slots(), t.elapsed());
}

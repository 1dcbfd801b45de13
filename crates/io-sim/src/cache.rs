//! A built graph kept on disk (its neighbor lists and levels; the vectors are drawn again from
//! their seed), since building 100k × 768 takes minutes.

use super::graph::{build_graph, random_vectors};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use vector_hnsw::memory::{l2_squared, InMemoryGraph};
use vector_hnsw::{EntryPoint, GraphParams};

const MAGIC: &[u8; 8] = b"vioGRPH1";

/// The examples' graph: `rows` random 768-dimensional vectors (seed 42), m 16,
/// ef_construction 64, kept under `$CARGO_TARGET_DIR/vector-io-sim/` (default `target/`).
pub fn example_graph(rows: usize) -> (Vec<Vec<f32>>, InMemoryGraph) {
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
    let path = PathBuf::from(target).join(format!(
        "vector-io-sim/graph-{rows}x768-m16-ef64-seed42.bin"
    ));
    let params = GraphParams {
        m: 16,
        ef_construction: 64,
    };
    cached_graph(&path, rows, 768, &params, 42).expect("graph cache")
}

/// The graph of `n` random `dims`-dimensional vectors (seed `seed`), from `path` if it was
/// built before with the same parameters, else built and written there. Returns the vectors
/// too.
pub fn cached_graph(
    path: &Path,
    n: usize,
    dims: usize,
    params: &GraphParams,
    seed: u64,
) -> std::io::Result<(Vec<Vec<f32>>, InMemoryGraph)> {
    let vectors = random_vectors(n, dims, seed);
    let header = [
        n as u64,
        dims as u64,
        params.m as u64,
        params.ef_construction as u64,
        seed,
    ];
    if let Ok(bytes) = std::fs::read(path) {
        if let Some((nodes, entry)) = decode(&bytes, &header) {
            let graph =
                InMemoryGraph::from_parts(params.m, l2_squared, vectors.clone(), nodes, entry);
            return Ok((vectors, graph));
        }
    }
    let graph = build_graph(&vectors, params, seed ^ 0x5eed);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    for h in header {
        out.extend_from_slice(&h.to_le_bytes());
    }
    let entry = graph.entry();
    out.extend_from_slice(&entry.map_or(u32::MAX, |e| e.id).to_le_bytes());
    out.push(entry.map_or(0, |e| e.level));
    for id in 0..graph.slots() as u32 {
        let layers = graph.layers(id);
        out.push(graph.level(id));
        out.push(layers.len() as u8);
        for list in layers {
            out.extend_from_slice(&(list.len() as u16).to_le_bytes());
            for n in list {
                out.extend_from_slice(&n.to_le_bytes());
            }
        }
    }
    let tmp = path.with_extension("tmp");
    std::fs::File::create(&tmp)?.write_all(&out)?;
    std::fs::rename(&tmp, path)?;
    Ok((vectors, graph))
}

type Nodes = Vec<(u8, Vec<Vec<u32>>)>;

fn decode(bytes: &[u8], header: &[u64; 5]) -> Option<(Nodes, Option<EntryPoint<u32>>)> {
    let mut r = bytes;
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic).ok()?;
    if &magic != MAGIC {
        return None;
    }
    for &h in header {
        if read_u64(&mut r)? != h {
            return None;
        }
    }
    let entry_id = read_u32(&mut r)?;
    let entry_level = read_u8(&mut r)?;
    let entry = (entry_id != u32::MAX).then_some(EntryPoint {
        id: entry_id,
        level: entry_level,
    });
    let mut nodes = Vec::with_capacity(header[0] as usize);
    for _ in 0..header[0] {
        let level = read_u8(&mut r)?;
        let count = read_u8(&mut r)?;
        let mut layers = Vec::with_capacity(usize::from(count));
        for _ in 0..count {
            let len = {
                let mut b = [0u8; 2];
                r.read_exact(&mut b).ok()?;
                u16::from_le_bytes(b)
            };
            let mut list = Vec::with_capacity(usize::from(len));
            for _ in 0..len {
                list.push(read_u32(&mut r)?);
            }
            layers.push(list);
        }
        nodes.push((level, layers));
    }
    r.is_empty().then_some((nodes, entry))
}

fn read_u8(r: &mut &[u8]) -> Option<u8> {
    let mut b = [0u8; 1];
    r.read_exact(&mut b).ok()?;
    Some(b[0])
}

fn read_u32(r: &mut &[u8]) -> Option<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b).ok()?;
    Some(u32::from_le_bytes(b))
}

fn read_u64(r: &mut &[u8]) -> Option<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b).ok()?;
    Some(u64::from_le_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_graph_reads_back_the_same() {
        let dir = std::env::temp_dir().join(format!("vector-io-cache-{}", std::process::id()));
        let path = dir.join("g.bin");
        let params = GraphParams {
            m: 4,
            ef_construction: 16,
        };
        let (_, built) = cached_graph(&path, 300, 8, &params, 3).unwrap();
        let (_, read) = cached_graph(&path, 300, 8, &params, 3).unwrap();
        assert_eq!(built.entry(), read.entry());
        for id in 0..300 {
            assert_eq!(built.layers(id), read.layers(id));
            assert_eq!(built.level(id), read.level(id));
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}

//! What an hnsw build reads once when it starts: the index's options, checked as pgvector checks
//! them, the column's dimensions, and the settings the build and its page stores run with.

use crate::am::hnsw::options;
use crate::am::shared::build::maintenance_work_mem;
use crate::opclass::{self, Method, Support};
use crate::storage::Relation;
use crate::stores::hnsw::build_pages::Placement;
use crate::stores::hnsw::page_graph::GraphSettings;
use vector_hnsw::GraphParams;

/// The parameters of one build, the same in every process of a parallel build.
#[derive(Clone, Copy)]
pub struct BuildParams {
    pub params: GraphParams,
    pub dimensions: u32,
    /// `hnsw.build_placement`.
    pub placement: Placement,
    /// `maintenance_work_mem`, in bytes.
    pub memory: usize,
    /// What the page graph takes once the build goes on in the pages.
    pub graph: GraphSettings,
    /// The `quantization` option: the codes' bits, or `None` for pgvector's format.
    pub quantization: Option<u8>,
    /// `hnsw.build_regions`, `None` for one region per 2,000 rows.
    pub regions: Option<usize>,
}

impl BuildParams {
    /// pgvector's checks of the column and the options, in its order.
    pub fn read(rel: Relation, support: &Support) -> Self {
        let dimensions = opclass::check_build_column(rel, support.type_info(), Method::Hnsw);
        let m = options::m(rel);
        let ef_construction = options::ef_construction(rel);
        options::check_build_options(m, ef_construction);
        let quantization = options::quantization(rel);
        let regions = options::build_regions();
        BuildParams {
            params: GraphParams { m, ef_construction },
            dimensions: dimensions as u32,
            placement: options::build_placement(),
            memory: maintenance_work_mem(),
            graph: options::graph_settings(rel),
            quantization,
            regions,
        }
    }
}

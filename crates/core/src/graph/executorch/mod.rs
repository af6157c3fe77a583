//! ExecuTorch programs (`.pte`): read ([`pte`]) and lowered into the IR
//! ([`lower`]); their memory plans and ETDump profiles become traces in
//! `trace::import::executorch`.
pub mod lower;
pub mod pte;
pub mod schema;

pub use pte::{Program, FORMAT, IDENTIFIER};

/// Loads a `.pte` as a graph named after the file.
pub fn load(path: &std::path::Path, opts: &super::LoadOptions) -> crate::Result<super::Graph> {
    if opts.batch.is_some() || !opts.dims.is_empty() {
        return Err(crate::Error::Unsupported(format!(
            "{}: --batch and --dim do not apply to ExecuTorch programs (their shapes are fixed in the program)",
            path.display()
        )));
    }
    let p = Program::load(path)?;
    lower::lower(&p, &model_name(path))
        .map(|l| l.graph)
        .map_err(|d| crate::Error::parse(path, FORMAT, d))
}

/// `squeezenet1_1.greedy.pte` -> `squeezenet1_1.greedy`.
pub fn model_name(path: &std::path::Path) -> String {
    path.file_name()
        .map(|s| s.to_string_lossy().trim_end_matches(".pte").to_string())
        .unwrap_or_default()
}

//! Prints every CRD of the API as multi-document YAML on stdout, or, given a directory, writes
//! each CRD to `<plural>.yaml` there (`hack/generate.sh` does that for `crds/yaml/`).

use std::{error::Error, path::PathBuf};

use mcp_task_operator_crds::generate::{crds, render_yaml};

fn main() -> Result<(), Box<dyn Error>> {
    let out_dir = std::env::args_os().nth(1).map(PathBuf::from);
    for crd in crds()? {
        match &out_dir {
            Some(dir) => {
                let path = dir.join(format!("{}.yaml", crd.spec.names.plural));
                std::fs::write(&path, render_yaml(&crd)?)
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            }
            None => print!("---\n{}", serde_yaml::to_string(&crd)?),
        }
    }
    Ok(())
}

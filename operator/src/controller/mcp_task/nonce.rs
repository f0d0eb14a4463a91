//! The message nonce of a tool with `messageNonce: true`: chosen once per task when its Job is
//! created, stored in the Job's pod template (an annotation the downward-API volume projects
//! into /var/run/mcp/message-nonce, or that the tool container's `MCP_MESSAGE_NONCE` takes when
//! it declares it, as the bridge does) and read back from the Job, so that an operator
//! restarted or failed over checks the same nonce. Kept apart from the pure Job build, which
//! stays deterministic.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{DownwardAPIVolumeFile, ObjectFieldSelector};
use rand::RngCore;

use mcp_task_operator_crds::mcp_tool::tool_container_index;

use crate::contract::{
    MESSAGE_NONCE_ENV, MESSAGE_NONCE_FILE, POD_MESSAGE_NONCE_ANNOTATION, VOLUME_NAME,
};

/// Random bytes in a nonce (256 bits), from the thread-local CSPRNG.
const NONCE_BYTES: usize = 32;

/// A fresh nonce: [`NONCE_BYTES`] random bytes as lowercase hex.
pub fn generate() -> String {
    let mut bytes = [0u8; NONCE_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Gives the Job's tool container `nonce`: a pod template annotation, projected by the
/// contract's downward-API volume (which `job` must have) as the file [`MESSAGE_NONCE_FILE`],
/// unless the tool container takes it from the environment ([`MESSAGE_NONCE_ENV`]): then no
/// file holds it, and nothing else in the container can read it there.
pub fn add_to_job(job: &mut Job, nonce: &str) {
    let Some(template) = job.spec.as_mut().map(|s| &mut s.template) else {
        return;
    };
    template
        .metadata
        .get_or_insert_with(Default::default)
        .annotations
        .get_or_insert_with(Default::default)
        .insert(POD_MESSAGE_NONCE_ANNOTATION.to_owned(), nonce.to_owned());
    let by_env = template.spec.as_ref().is_some_and(|s| {
        tool_container_index(&s.containers)
            .and_then(|i| s.containers[i].env.as_ref())
            .is_some_and(|env| env.iter().any(|e| e.name == MESSAGE_NONCE_ENV))
    });
    if by_env {
        return;
    }
    let volume = template
        .spec
        .iter_mut()
        .flat_map(|s| s.volumes.iter_mut().flatten())
        .find(|v| v.name == VOLUME_NAME);
    if let Some(items) = volume.and_then(|v| v.downward_api.as_mut()) {
        items
            .items
            .get_or_insert_with(Vec::new)
            .push(DownwardAPIVolumeFile {
                path: MESSAGE_NONCE_FILE.to_owned(),
                field_ref: Some(ObjectFieldSelector {
                    api_version: None,
                    field_path: format!("metadata.annotations['{POD_MESSAGE_NONCE_ANNOTATION}']"),
                }),
                ..DownwardAPIVolumeFile::default()
            });
    }
}

/// The nonce the Job's tool must sign its messages with, if it has one (the caller checks
/// that the task controls the Job).
pub fn of_job(job: &Job) -> Option<&str> {
    // A warm Job's template was made before any task: the claim put the nonce on the Job.
    if let Some(nonce) = job
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(POD_MESSAGE_NONCE_ANNOTATION))
    {
        return Some(nonce);
    }
    job.spec
        .as_ref()?
        .template
        .metadata
        .as_ref()?
        .annotations
        .as_ref()?
        .get(POD_MESSAGE_NONCE_ANNOTATION)
        .map(String::as_str)
        .filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::controller::mcp_task::build::build_job;
    use crate::fixtures::{downward_files, task, tool};

    /// The (path, field path) pairs the Job's contract volume projects.
    fn contract_files(job: &Job) -> Vec<(String, String)> {
        let spec = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
        let volume = spec
            .volumes
            .iter()
            .flatten()
            .find(|v| v.name == VOLUME_NAME);
        downward_files(volume.unwrap())
            .into_iter()
            .map(|(path, field)| (path.to_owned(), field.to_owned()))
            .collect()
    }

    #[test]
    fn nonces_are_256_random_bits_in_hex() {
        let (a, b) = (generate(), generate());
        assert_eq!(a.len(), 2 * NONCE_BYTES);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn the_nonce_is_projected_into_its_file_and_read_back_from_the_job() {
        let config = Config::from_lookup(|_| None).unwrap();
        let mut job = build_job(&task(), &tool(), &config).unwrap();
        assert_eq!(of_job(&job), None, "no nonce unless added");
        add_to_job(&mut job, "abc123");
        assert_eq!(of_job(&job), Some("abc123"));
        let files = contract_files(&job);
        let (_, field) = files
            .iter()
            .find(|(path, _)| *path == MESSAGE_NONCE_FILE)
            .unwrap();
        assert_eq!(*field, "metadata.annotations['mcptasks.io/message-nonce']");
    }

    #[test]
    fn a_container_that_takes_the_nonce_from_its_environment_gets_no_nonce_file() {
        use k8s_openapi::api::core::v1::EnvVar;

        let config = Config::from_lookup(|_| None).unwrap();
        let mut job = build_job(&task(), &tool(), &config).unwrap();
        let spec = job.spec.as_mut().unwrap().template.spec.as_mut().unwrap();
        spec.containers[0]
            .env
            .get_or_insert_with(Vec::new)
            .push(EnvVar {
                name: MESSAGE_NONCE_ENV.into(),
                ..EnvVar::default()
            });
        add_to_job(&mut job, "abc123");
        assert_eq!(of_job(&job), Some("abc123"));
        let files = contract_files(&job);
        assert!(
            !files.iter().any(|(path, _)| *path == MESSAGE_NONCE_FILE),
            "{files:?}"
        );
    }
}

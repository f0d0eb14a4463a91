//! Env var values the operator gives the tool container: written so that the kubelet passes
//! them on literally, and bounded by what a process can receive.
//!
//! The kubelet expands `$(NAME)` in an env `value` with every variable defined before it
//! (including the template's own, say a `secretKeyRef`), and turns `$$` into `$`. Caller data
//! such as the arguments must reach the tool exactly as sent, so every `$` is doubled.
//! See https://kubernetes.io/docs/tasks/inject-data-application/define-interdependent-environment-variables/

/// Longest `NAME=value` string (with its terminating NUL) Linux passes to a new process
/// (`MAX_ARG_STRLEN`, 32 pages of 4 KiB); a longer one fails the exec with `E2BIG`.
pub const MAX_ENV_VAR_BYTES: usize = 128 * 1024;

/// Why an env var cannot be given to the tool container.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "env var {name} would be {bytes} bytes, over the {max}-byte limit a container can receive \
     (Linux MAX_ARG_STRLEN, counting NAME=value and its terminating NUL)"
)]
pub struct EnvTooLarge {
    /// The variable's name.
    pub name: String,
    /// Size of `NAME=value` plus the NUL, in bytes.
    pub bytes: usize,
    /// [`MAX_ENV_VAR_BYTES`].
    pub max: usize,
}

/// `value` as an env `value` the kubelet passes on unchanged: every `$` doubled, so that no
/// `$(NAME)` reference is expanded.
pub fn kubelet_literal(value: &str) -> String {
    value.replace('$', "$$")
}

/// Checks that the container can receive `name=value` (the value it sees, before escaping).
pub fn check_env_size(name: &str, value: &str) -> Result<(), EnvTooLarge> {
    // "NAME=" + value + NUL.
    let bytes = name.len() + 1 + value.len() + 1;
    if bytes > MAX_ENV_VAR_BYTES {
        return Err(EnvTooLarge {
            name: name.to_owned(),
            bytes,
            max: MAX_ENV_VAR_BYTES,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dollar_is_doubled_so_no_reference_expands() {
        assert_eq!(kubelet_literal("plain"), "plain");
        assert_eq!(
            kubelet_literal(r#"{"name":"$(SECRET) a$$b $"}"#),
            r#"{"name":"$$(SECRET) a$$$$b $$"}"#
        );
        assert_eq!(kubelet_literal("$$$"), "$$$$$$");
    }

    #[test]
    fn a_value_over_max_arg_strlen_is_refused_with_its_size() {
        let name = "MCP_TOOL_ARGUMENTS";
        let fits = "x".repeat(MAX_ENV_VAR_BYTES - name.len() - 2);
        assert_eq!(check_env_size(name, &fits), Ok(()));
        let err = check_env_size(name, &format!("{fits}y")).unwrap_err();
        assert_eq!(err.bytes, MAX_ENV_VAR_BYTES + 1);
        assert!(err.to_string().contains("131072-byte limit"), "{err}");
    }
}

//! Whether and how traces are exported, from the standard OpenTelemetry environment variables
//! (<https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/>).
//!
//! Off unless an OTLP endpoint is set. Only OTLP over plain HTTP with protobuf bodies is built
//! in; a setting this build cannot honour fails startup with the variable named, rather than
//! exporting nothing in silence.

use std::time::Duration;

/// The exporter's request timeout when none is set (the OpenTelemetry default).
pub const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest export timeout accepted.
pub const MAX_EXPORT_TIMEOUT: Duration = Duration::from_secs(300);

/// A setting that cannot be honoured.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// The endpoint is not a plain `http://` URL.
    #[error(
        "{var}={value:?} is not an http:// URL: traces are sent as OTLP/HTTP without TLS (send \
         them to a collector on the node or in the cluster)"
    )]
    Endpoint {
        /// The variable read.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// A protocol other than `http/protobuf`.
    #[error("{var}={value:?} is not supported: only http/protobuf is built in")]
    Protocol {
        /// The variable read.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// An exporter other than `otlp` or `none`.
    #[error("{var}={value:?} is not supported: set otlp or none")]
    Exporter {
        /// The variable read.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// A timeout that is not a whole number of milliseconds from 1 to the limit.
    #[error("{var}={value:?} is not a timeout in milliseconds from 1 to {max_ms}")]
    Timeout {
        /// The variable read.
        var: &'static str,
        /// Its value.
        value: String,
        /// The largest value accepted.
        max_ms: u128,
    },
}

/// How traces are exported, when they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpSettings {
    /// Bound on each export request (`OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else
    /// `OTEL_EXPORTER_OTLP_TIMEOUT`, in ms; default [`DEFAULT_EXPORT_TIMEOUT`]).
    pub timeout: Duration,
}

/// Reads the settings through `env` (a variable's value, `None` when unset); `Ok(None)` means
/// tracing export is off: no endpoint set, `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`.
/// The endpoint itself is read again by the exporter, which appends `/v1/traces` to
/// `OTEL_EXPORTER_OTLP_ENDPOINT` and uses `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is.
pub fn otlp_settings(
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<OtlpSettings>, ConfigError> {
    // An empty variable counts as unset, as the specification says.
    let get = |var: &'static str| env(var).filter(|v| !v.trim().is_empty()).map(|v| (var, v));
    let first = |a, b| get(a).or_else(|| get(b));
    if get("OTEL_SDK_DISABLED").is_some_and(|(_, v)| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    if let Some((var, value)) = get("OTEL_TRACES_EXPORTER") {
        match value.trim() {
            "none" => return Ok(None),
            "otlp" => {}
            _ => return Err(ConfigError::Exporter { var, value }),
        }
    }
    let Some((var, value)) = first(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ) else {
        return Ok(None);
    };
    if !value.trim().to_ascii_lowercase().starts_with("http://") {
        return Err(ConfigError::Endpoint { var, value });
    }
    if let Some((var, value)) = first(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ) && value.trim() != "http/protobuf"
    {
        return Err(ConfigError::Protocol { var, value });
    }
    let timeout = match first(
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ) {
        None => DEFAULT_EXPORT_TIMEOUT,
        Some((var, value)) => {
            let max_ms = MAX_EXPORT_TIMEOUT.as_millis();
            match value.trim().parse::<u64>() {
                Ok(ms) if ms >= 1 && u128::from(ms) <= max_ms => Duration::from_millis(ms),
                _ => return Err(ConfigError::Timeout { var, value, max_ms }),
            }
        }
    };
    Ok(Some(OtlpSettings { timeout }))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<Option<OtlpSettings>, ConfigError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        otlp_settings(|k| vars.get(k).cloned())
    }

    const ENDPOINT: (&str, &str) = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");

    #[test]
    fn export_is_off_without_an_endpoint_and_on_with_one() {
        assert_eq!(read(&[]), Ok(None));
        assert_eq!(read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]), Ok(None));
        let on = Some(OtlpSettings {
            timeout: DEFAULT_EXPORT_TIMEOUT,
        });
        assert_eq!(read(&[ENDPOINT]), Ok(on.clone()));
        let traces = (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://c:4318/v1/traces",
        );
        assert_eq!(read(&[traces]), Ok(on));
    }

    #[test]
    fn the_standard_switches_turn_export_off() {
        assert_eq!(read(&[ENDPOINT, ("OTEL_SDK_DISABLED", "TRUE")]), Ok(None));
        assert_eq!(
            read(&[ENDPOINT, ("OTEL_TRACES_EXPORTER", "none")]),
            Ok(None)
        );
        assert!(read(&[ENDPOINT, ("OTEL_SDK_DISABLED", "false")]).is_ok_and(|s| s.is_some()));
    }

    #[test]
    fn settings_this_build_cannot_honour_are_refused_with_the_variable_named() {
        let https = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c:4318")]);
        assert!(
            https
                .as_ref()
                .is_err_and(|e| e.to_string().contains("OTEL_EXPORTER_OTLP_ENDPOINT")),
            "{https:?}"
        );
        // The traces variable wins over the general one.
        let traces = read(&[ENDPOINT, ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "c:4318")]);
        assert!(matches!(
            traces,
            Err(ConfigError::Endpoint {
                var: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                ..
            })
        ));
        let grpc = read(&[ENDPOINT, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]);
        assert!(matches!(grpc, Err(ConfigError::Protocol { .. })));
        let zipkin = read(&[ENDPOINT, ("OTEL_TRACES_EXPORTER", "zipkin")]);
        assert!(matches!(zipkin, Err(ConfigError::Exporter { .. })));
        let protobuf = read(&[ENDPOINT, ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")]);
        assert!(protobuf.is_ok_and(|s| s.is_some()));
    }

    #[test]
    fn the_export_timeout_is_read_in_milliseconds_and_bounded() {
        let timeout = |v| read(&[ENDPOINT, ("OTEL_EXPORTER_OTLP_TIMEOUT", v)]);
        assert_eq!(
            timeout("2500"),
            Ok(Some(OtlpSettings {
                timeout: Duration::from_millis(2500)
            }))
        );
        for bad in ["0", "-1", "1.5", "300001", "ten"] {
            let error = timeout(bad).expect_err(bad).to_string();
            assert!(error.contains("from 1 to 300000"), "{error}");
        }
    }
}

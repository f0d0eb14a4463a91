//! Which Service in the namespace is the front end, when no `--url` names it: the CLI sends
//! its bearer token there, so a Service anyone else labelled like the chart's must never be
//! taken for it. Labels prove nothing, so more than one candidate is refused, not guessed.

use k8s_openapi::api::core::v1::Service;
use mcp_task_operator_crds::TOKEN_AUDIENCE_ANNOTATION;

use crate::Error;
use crate::term::inert_line;

/// Label the chart gives the front end's Service.
pub const FRONTEND_SELECTOR: &str = "app.kubernetes.io/component=mcp-frontend";
/// Label naming the Helm release an object belongs to (the chart sets it on every object).
const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// Longest token audience taken from a Service's annotation.
const MAX_AUDIENCE_BYTES: usize = 512;

/// The front end Service the CLI talks to.
#[derive(Debug)]
pub struct Frontend {
    /// Its MCP endpoint at the cluster IP.
    pub url: String,
    /// The Host to send: its DNS name and port.
    pub host: String,
    /// Its name, for messages.
    name: String,
    /// The audience the chart publishes on it ([`TOKEN_AUDIENCE_ANNOTATION`]), if any.
    audience: Option<String>,
}

impl Frontend {
    /// The audience to mint tokens for: the one the Service publishes. A Service without it
    /// (a chart before per-release audiences, or static or no authentication) is an error
    /// asking for `--audience`, never a guess: a shared guess is what per-release audiences
    /// exist to avoid.
    pub fn token_audience(&self) -> Result<&str, Error> {
        let name = &self.name;
        match self.audience.as_deref() {
            None | Some("") => Err(Error::Usage(format!(
                "the front end Service {name} publishes no token audience \
                 ({TOKEN_AUDIENCE_ANNOTATION}; the chart sets it in tokenreview mode): pass \
                 --audience"
            ))),
            Some(audience) if audience.len() > MAX_AUDIENCE_BYTES => Err(Error::Usage(format!(
                "the token audience the front end Service {name} publishes is longer than \
                 {MAX_AUDIENCE_BYTES} bytes: pass --audience"
            ))),
            Some(audience) if audience.chars().any(char::is_control) => Err(Error::Usage(format!(
                "the token audience the front end Service {name} publishes holds control \
                     characters ({}): pass --audience",
                inert_line(audience)
            ))),
            Some(audience) => Ok(audience),
        }
    }
}

/// The front end among `services` (those wearing [`FRONTEND_SELECTOR`] in `namespace`): the
/// only one, or the only one of Helm release `release` when given. None, or more than one,
/// is an error that names what was found and the flag that chooses.
pub fn pick_frontend(
    services: &[Service],
    namespace: &str,
    release: Option<&str>,
) -> Result<Frontend, Error> {
    let candidates: Vec<&Service> = services
        .iter()
        .filter(|s| release.is_none_or(|r| release_of(s) == Some(r)))
        .collect();
    let [service] = candidates.as_slice() else {
        return Err(not_one(services, &candidates, namespace, release));
    };
    let name = service.metadata.name.as_deref().unwrap_or_default();
    let spec = service.spec.as_ref();
    let ip = spec
        .and_then(|s| s.cluster_ip.as_deref())
        .filter(|ip| *ip != "None" && !ip.is_empty());
    let port = spec
        .and_then(|s| s.ports.as_ref())
        .and_then(|p| p.first())
        .map(|p| p.port);
    let (Some(ip), Some(port)) = (ip, port) else {
        return Err(Error::Usage(format!(
            "the front end Service {name} in namespace {namespace} has no cluster IP and port; \
             pass --url"
        )));
    };
    let audience = service
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(TOKEN_AUDIENCE_ANNOTATION))
        .cloned();
    Ok(Frontend {
        url: format!("http://{ip}:{port}/mcp"),
        host: format!("{name}.{namespace}.svc:{port}"),
        name: name.to_owned(),
        audience,
    })
}

fn release_of(service: &Service) -> Option<&str> {
    service
        .metadata
        .labels
        .as_ref()?
        .get(INSTANCE_LABEL)
        .map(String::as_str)
}

/// The error for `candidates` not being exactly one Service.
fn not_one(
    services: &[Service],
    candidates: &[&Service],
    namespace: &str,
    release: Option<&str>,
) -> Error {
    let described = |list: &mut dyn Iterator<Item = &Service>| -> String {
        list.map(|s| {
            let name = s.metadata.name.as_deref().unwrap_or_default();
            match release_of(s) {
                Some(r) => format!("{name} (release {r})"),
                None => format!("{name} (no release label)"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
    };
    let of_release = release
        .map(|r| format!(" of release {r}"))
        .unwrap_or_default();
    let message = match (candidates.len(), release) {
        (0, None) => format!(
            "no front end Service ({FRONTEND_SELECTOR}) in namespace {namespace}; pass --url or \
             set MCP_URL"
        ),
        (0, Some(_)) if !services.is_empty() => format!(
            "no front end Service{of_release} in namespace {namespace}; found {}: pass \
             --release with one of those releases, or --url",
            described(&mut services.iter())
        ),
        (0, Some(_)) => format!(
            "no front end Service{of_release} ({FRONTEND_SELECTOR}) in namespace {namespace}; \
             pass --url or set MCP_URL"
        ),
        (n, None) => format!(
            "{n} Services in namespace {namespace} are labelled as the front end \
             ({FRONTEND_SELECTOR}): {}; the token goes to none of them unchosen: pass \
             --release NAME (the Helm release) or --url",
            described(&mut candidates.iter().copied())
        ),
        (n, Some(_)) => format!(
            "{n} Services{of_release} in namespace {namespace} are labelled as the front end \
             ({FRONTEND_SELECTOR}): {}; labels cannot tell which is the release's own: pass \
             --url with its address",
            described(&mut candidates.iter().copied())
        ),
    };
    Error::Usage(message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn service(name: &str, release: Option<&str>, ip: &str) -> Service {
        let mut labels = json!({"app.kubernetes.io/component": "mcp-frontend"});
        if let Some(r) = release {
            labels[INSTANCE_LABEL] = json!(r);
        }
        let audience = format!("mcp-task-operator.ns.{name}");
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ns", "labels": labels,
                         "annotations": {TOKEN_AUDIENCE_ANNOTATION: audience}},
            "spec": {"clusterIP": ip, "ports": [{"name": "http", "port": 8080}]},
        }))
        .unwrap()
    }

    fn err(services: &[Service], release: Option<&str>) -> String {
        pick_frontend(services, "ns", release)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn the_only_front_end_service_is_used_at_its_cluster_ip_and_dns_name() {
        let real = service("cli-mcp-frontend", Some("cli"), "10.96.0.7");
        let front = pick_frontend(&[real], "ns", None).unwrap();
        assert_eq!(front.url, "http://10.96.0.7:8080/mcp");
        assert_eq!(front.host, "cli-mcp-frontend.ns.svc:8080");
    }

    #[test]
    fn tokens_are_minted_for_the_audience_the_picked_service_publishes() {
        let services = [
            service("other-mcp-frontend", Some("other"), "10.96.0.9"),
            service("cli-mcp-frontend", Some("cli"), "10.96.0.7"),
        ];
        let front = pick_frontend(&services, "ns", Some("cli")).unwrap();
        assert_eq!(
            front.token_audience().unwrap(),
            "mcp-task-operator.ns.cli-mcp-frontend"
        );
    }

    #[test]
    fn a_missing_or_unusable_published_audience_asks_for_audience() {
        let mut old_chart = service("cli-mcp-frontend", Some("cli"), "10.96.0.7");
        old_chart.metadata.annotations = None;
        let front = pick_frontend(&[old_chart], "ns", None).unwrap();
        let got = front.token_audience().unwrap_err().to_string();
        assert!(got.contains("publishes no token audience"), "{got}");
        assert!(got.contains("pass --audience"), "{got}");
        for (bad, says) in [
            ("x".repeat(MAX_AUDIENCE_BYTES + 1), "longer than 512 bytes"),
            ("a\u{1b}[2Jb".to_owned(), "a\\u{1b}[2Jb"),
        ] {
            let mut service = service("cli-mcp-frontend", Some("cli"), "10.96.0.7");
            service.metadata.annotations = Some([(TOKEN_AUDIENCE_ANNOTATION.into(), bad)].into());
            let front = pick_frontend(&[service], "ns", None).unwrap();
            let got = front.token_audience().unwrap_err().to_string();
            assert!(
                got.contains(says) && got.contains("pass --audience"),
                "{got}"
            );
        }
    }

    #[test]
    fn a_second_service_with_the_front_ends_label_is_refused_not_guessed() {
        let services = [
            service("a-decoy", None, "10.96.0.9"),
            service("cli-mcp-frontend", Some("cli"), "10.96.0.7"),
        ];
        let got = err(&services, None);
        assert!(got.starts_with("2 Services in namespace ns"), "{got}");
        assert!(got.contains("a-decoy (no release label)"), "{got}");
        assert!(got.contains("cli-mcp-frontend (release cli)"), "{got}");
        assert!(got.contains("pass --release NAME"), "{got}");
    }

    #[test]
    fn release_picks_the_service_of_that_release_only() {
        let services = [
            service("a-decoy", Some("other"), "10.96.0.9"),
            service("cli-mcp-frontend", Some("cli"), "10.96.0.7"),
        ];
        let front = pick_frontend(&services, "ns", Some("cli")).unwrap();
        assert_eq!(front.url, "http://10.96.0.7:8080/mcp");
        let got = err(&services, Some("nope"));
        assert!(
            got.contains("no front end Service of release nope"),
            "{got}"
        );
        assert!(got.contains("a-decoy (release other)"), "{got}");
    }

    #[test]
    fn two_services_claiming_the_same_release_are_refused() {
        let services = [
            service("a-decoy", Some("cli"), "10.96.0.9"),
            service("cli-mcp-frontend", Some("cli"), "10.96.0.7"),
        ];
        let got = err(&services, Some("cli"));
        assert!(got.starts_with("2 Services of release cli"), "{got}");
        assert!(got.contains("pass --url"), "{got}");
    }

    #[test]
    fn no_service_or_a_headless_one_asks_for_the_url() {
        assert!(err(&[], None).contains("no front end Service"));
        let headless = service("cli-mcp-frontend", Some("cli"), "None");
        assert!(err(&[headless], None).contains("has no cluster IP and port; pass --url"));
    }
}

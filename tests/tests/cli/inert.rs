//! A tool's escape sequences reach the terminal inert: a tool prints a status message, a
//! question and a result full of them (an OSC 8 link showing one URL and opening another,
//! clear-screen, cursor moves, a carriage return over the question, hidden text, bidi
//! overrides) and a raw one in its log; every `kubectl mcp` command that shows them prints
//! their escapes instead (cli/src/term.rs).

use std::process::Output;

use mcp_task_operator_harness::callers::caller_token;
use mcp_task_operator_harness::operator::{create_tool, shell_tool};
use mcp_task_operator_harness::stack::{Release, install, mcp_url, wait_tools_ready};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;
use tokio::task::block_in_place;

use super::{CALLER, RELEASE, SETS, kubectl_mcp, kubectl_mcp_typing, plugin_dir, task_id};
use crate::common::prepare_examples_blocking;

/// A tool whose every message carries escape sequences. JSON `\u001b` is ESC once parsed;
/// `printf '\033'` prints a raw ESC into the log, `\342\200\256` a raw U+202E.
const HOSTILE_SCRIPT: &str = r#"
printf 'plain \033[2J log line \342\200\256\n'
printf '%s\n' '{"mcp":"status","message":"\u001b[2J\u001b[H\u001b]8;;https://evil.example/\u0007https://good.example/\u001b]8;;\u0007 \u202egnp.exe"}'
sleep 4
printf '%s\n' '{"mcp":"input","requests":{"q1":{"method":"elicitation/create","params":{"mode":"form","message":"Keep r.txt?\u001b[1A\u001b[2K\rDelete r.txt?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean","title":"ok\u001b[8m hidden","description":"say \u2066yes\u2069"}},"required":["ok"]}}}}}'
until grep -q '"q1"' /var/run/mcp/input-responses; do sleep 0.2; done
printf '%s\n' '{"mcp":"result","result":{"content":[{"type":"text","text":"done \u001b]8;;https://evil.example/\u001b\\https://good.example/\u001b]8;;\u001b\\ \u202etxt.exe"}]}}'
"#;

/// Whether `c` would act on a terminal: a control character but `\n` and `\t`, or a bidi
/// control.
fn acts(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Asserts that neither stream of `out` holds a character that acts on a terminal.
fn assert_inert(what: &str, out: &Output) {
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        let active: Vec<char> = text.chars().filter(|c| acts(*c)).collect();
        assert!(
            active.is_empty(),
            "{what}: {stream} holds {active:?}:\n{}",
            text.escape_debug()
        );
    }
}

/// Before the fix every one of these reached the terminal raw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_mcp_prints_a_tools_escape_sequences_inert() {
    with_temp_ns("cli-inert", |client, ns| async move {
        prepare_examples_blocking(&client).await;
        let _release = Release::new(&ns, RELEASE);
        let port = block_in_place(|| install(&ns, RELEASE, SETS));
        caller_token(&client, &ns, RELEASE, CALLER).await;
        create_tool(
            &client,
            &ns,
            &shell_tool("hostile", HOSTILE_SCRIPT, json!({})),
        )
        .await;
        block_in_place(|| wait_tools_ready(&ns));
        let plugin = plugin_dir();
        let url = mcp_url(port);
        let who = [
            "-n",
            ns.as_str(),
            "--url",
            &url,
            "--service-account",
            CALLER,
        ];

        // Followed, the question answered from standard input.
        let args: Vec<&str> = who
            .iter()
            .copied()
            .chain(["call", "hostile", "--follow"])
            .collect();
        let followed = block_in_place(|| kubectl_mcp_typing(&plugin, &args, "yes\n"));
        let text = String::from_utf8_lossy(&followed.stdout).into_owned()
            + &String::from_utf8_lossy(&followed.stderr);
        println!(
            "--- kubectl mcp call hostile --follow\n{}",
            text.escape_debug()
        );
        assert_inert("call --follow", &followed);
        assert_eq!(followed.status.code(), Some(0), "{}", text.escape_debug());
        for shown in [
            r"\u{1b}[2J\u{1b}[H\u{1b}]8;;https://evil.example/\u{7}https://good.example/",
            r" \u{202e}gnp.exe",
            r"Keep r.txt?\u{1b}[1A\u{1b}[2K\u{d}Delete r.txt?",
            r"say \u{2066}yes\u{2069}",
            r"ok\u{1b}[8m hidden (boolean): ",
            "answered q1",
            r"done \u{1b}]8;;https://evil.example/\u{1b}\https://good.example/",
            r" \u{202e}txt.exe",
        ] {
            assert!(
                text.contains(shown),
                "no {shown:?} in:\n{}",
                text.escape_debug()
            );
        }
        let id = task_id(&text);

        // The kubeconfig's views of the same task.
        for (what, args) in [
            ("tasks", vec!["-n", ns.as_str(), "tasks"]),
            ("describe", vec!["-n", ns.as_str(), "describe", id.as_str()]),
            ("logs", vec!["-n", ns.as_str(), "logs", id.as_str()]),
        ] {
            let out = block_in_place(|| kubectl_mcp(&plugin, &args));
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            println!("--- kubectl mcp {what}\n{}", text.escape_debug());
            assert!(out.status.success(), "{what}: {}", text.escape_debug());
            assert_inert(what, &out);
            if what == "logs" {
                assert!(
                    text.contains(r"plain \u{1b}[2J log line \u{202e}"),
                    "{}",
                    text.escape_debug()
                );
            }
            if what == "describe" {
                assert!(
                    text.contains(r"Result:         done \u{1b}]8;;https://evil.example/"),
                    "{}",
                    text.escape_debug()
                );
            }
        }
    })
    .await;
}

//! Raw HTTP/1.1: any bytes, any headers, and the answer read whole.

use super::*;

/// An HTTP answer.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) content_type: String,
    pub(super) body: Vec<u8>,
}

/// Sends one raw HTTP/1.1 request to `port` and reads the whole answer; the body is written
/// while the answer is read, so an early refusal (413) is seen even if the rest is not read.
pub(super) async fn send(port: u16, row: &Row) -> Answer {
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect to the front end");
    let (mut reader, mut writer) = stream.into_split();
    let mut head = b"POST /mcp HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n".to_vec();
    for (name, value) in &row.headers {
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\n");
    }
    if row.chunked {
        head.extend_from_slice(b"transfer-encoding: chunked\r\n\r\n");
    } else {
        head.extend_from_slice(format!("content-length: {}\r\n\r\n", row.body.len()).as_bytes());
    }
    let body = row.body.clone();
    let chunked = row.chunked;
    let write = tokio::spawn(async move {
        let _: std::io::Result<()> = async {
            writer.write_all(&head).await?;
            if chunked {
                for chunk in body.chunks(64 * 1024) {
                    let size = format!("{:x}\r\n", chunk.len());
                    writer.write_all(size.as_bytes()).await?;
                    writer.write_all(chunk).await?;
                    writer.write_all(b"\r\n").await?;
                }
                writer.write_all(b"0\r\n\r\n").await?;
            } else {
                writer.write_all(&body).await?;
            }
            writer.flush().await
        }
        .await;
        // NB: dropping the write half sends FIN, and hyper drops a half-closed connection
        // without answering; keep it open until the answer is read (the task is aborted).
        let _open = writer;
        std::future::pending::<()>().await;
    });
    let mut raw = Vec::new();
    // A reset after the answer (the server did not read the whole body) ends the read.
    let _ = reader.read_to_end(&mut raw).await;
    write.abort();
    parse_answer(&raw).unwrap_or_else(|| {
        panic!(
            "{}: no HTTP answer: {:?}",
            row.name,
            String::from_utf8_lossy(&raw)
        )
    })
}

fn parse_answer(raw: &[u8]) -> Option<Answer> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let mut content_type = String::new();
    let mut chunked = false;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        match name.trim().to_ascii_lowercase().as_str() {
            "content-type" => value.trim().clone_into(&mut content_type),
            "transfer-encoding" => chunked = value.contains("chunked"),
            _ => {}
        }
    }
    let mut body = raw[end + 4..].to_vec();
    if chunked {
        body = dechunk(&body);
    }
    Some(Answer {
        status,
        content_type,
        body,
    })
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line_end) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&raw[..line_end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 || raw.len() < line_end + 2 + size {
            break;
        }
        out.extend_from_slice(&raw[line_end + 2..line_end + 2 + size]);
        raw = &raw[(line_end + 4 + size).min(raw.len())..];
    }
    out
}

//! The test tools of mcptest served by the Rust SDK (rmcp on crates.io), and
//! the SDK's own client driving one sdkrec scenario (see ../../plans.go).
//! `rmcprec server` listens on MCP_PORT; `rmcprec client` talks to MCP_URL
//! and prints one JSON line per step start and end on stdout.

use std::time::Duration;

use rmcp::{
    ClientLifecycleMode, ClientServiceExt, ErrorData, Peer, RoleServer, ServerHandler, ServiceExt,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{
        RequestParamsMeta,
        CallToolRequestParams, CallToolResult, ClientConfig, ClientRequest, ContentBlock,
        Implementation, NumberOrString, ProgressNotificationParam, ProgressToken,
        ProtocolVersion, Request, RequestMetaObject, ServerCapabilities, ServerConfig,
    },
    schemars,
    service::PeerRequestOptions,
    tool, tool_handler, tool_router,
    transport::{
        StreamableHttpClientTransport,
        streamable_http_client::StreamableHttpClientTransportConfig,
        streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
        },
    },
};
use serde_json::{Value, json};

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct LookupIn {
    key: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct DeleteIn {
    id: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct CountIn {
    n: Option<u32>,
}

#[derive(Debug, Clone)]
struct Tools {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Tools {
    #[tool(description = "Look up a value by key.", annotations(read_only_hint = true, idempotent_hint = true))]
    fn lookup(&self, Parameters(LookupIn { key }): Parameters<LookupIn>) -> String {
        format!("value of {key}")
    }

    #[tool(description = "Delete an item.", annotations(destructive_hint = true))]
    fn delete_item(&self, Parameters(DeleteIn { id }): Parameters<DeleteIn>) -> String {
        format!("deleted {id}")
    }

    #[tool(description = "Fail every time.")]
    fn always_fails(&self) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::error(vec![ContentBlock::text("the tool failed on purpose")]))
    }

    #[tool(description = "Count, reporting progress.")]
    async fn count_slowly(
        &self,
        Parameters(CountIn { n }): Parameters<CountIn>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> String {
        let n = n.unwrap_or(3);
        for i in 0..n {
            if let Some(token) = meta.get_progress_token() {
                let _ = peer
                    .notify_progress(ProgressNotificationParam::new(token, (i + 1) as f64).with_total(n as f64))
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        format!("counted to {n}")
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

async fn serve(port: u16) -> anyhow::Result<()> {
    let mut cfg = StreamableHttpServerConfig::default();
    cfg.legacy_session_mode = true;
    let service: StreamableHttpService<Tools, LocalSessionManager> = StreamableHttpService::new(
        || Ok(Tools { tool_router: Tools::tool_router() }),
        Default::default(),
        cfg,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    axum::serve(listener, router).await?;
    Ok(())
}

fn say(v: Value) {
    println!("{v}");
}

fn now() -> String {
    // RFC 3339 from the system clock, in UTC with microseconds.
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    let (y, m, dd) = civil(days);
    format!(
        "{y:04}-{m:02}-{dd:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_micros()
    )
}

// civil converts days since 1970-01-01 to a date (Howard Hinnant's algorithm).
fn civil(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + if m <= 2 { 1 } else { 0 }, m, d)
}

type Client = rmcp::service::RunningService<rmcp::RoleClient, ClientConfig>;

async fn connect(url: &str, version: ProtocolVersion) -> anyhow::Result<Client> {
    let transport = StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(url.to_string()));
    let mut info = ClientConfig::default();
    info.protocol_version = version.clone();
    info.client_info = Implementation::new("rmcp-recorder-client", "3.11.0");
    if version == ProtocolVersion::V_2026_07_28 {
        // No initialize, no session: server/discover, then _meta on every request.
        let mode = ClientLifecycleMode::Discover { preferred_versions: vec![version] };
        return Ok(info.serve_with_lifecycle(transport, mode).await?);
    }
    Ok(info.serve(transport).await?)
}

fn params(tool: &str, args: Value, progress: Option<i64>) -> CallToolRequestParams {
    let mut p = CallToolRequestParams::new(tool.to_string());
    if let Value::Object(m) = args {
        p = p.with_arguments(m);
    }
    if let Some(t) = progress {
        p.set_meta(RequestMetaObject::with_progress_token(ProgressToken(NumberOrString::Number(t))));
    }
    p
}

/// step runs one call (re-sent up to resend times after an SDK error) and
/// reports what the application concluded.
async fn step(c: &Client, name: &str, p: CallToolRequestParams, resend: u32, timeout: Option<Duration>) -> String {
    say(json!({"step": name, "start": now()}));
    let mut attempts = 0;
    let (got, detail) = loop {
        attempts += 1;
        let res = match timeout {
            None => c.call_tool(p.clone()).await.map_err(|e| e.to_string()),
            Some(t) => {
                let opts = PeerRequestOptions::with_timeout(t);
                match c.send_request_with_option(ClientRequest::CallToolRequest(Request::new(p.clone())), opts).await {
                    Ok(h) => h.await_response().await.map(|_| CallToolResult::success(vec![])).map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                }
            }
        };
        match res {
            Ok(r) if r.is_error == Some(true) => break ("tool_error", format!("{:?}", r.content)),
            Ok(r) => break ("result", format!("{:?}", r.content)),
            Err(e) if attempts > resend => break ("call_error", e),
            Err(_) => {}
        }
    };
    let detail: String = detail.chars().take(200).collect();
    say(json!({"step": name, "got": got, "attempts": attempts, "detail": detail}));
    got.to_string()
}

async fn list(c: &Client) {
    say(json!({"step": "list tools", "start": now()}));
    let got = match c.list_all_tools().await {
        Ok(_) => "result",
        Err(_) => "call_error",
    };
    say(json!({"step": "list tools", "got": got, "attempts": 1}));
}

async fn drive(url: &str, scenario: &str) -> anyhow::Result<()> {
    let cancel_after = Some(Duration::from_millis(500));
    if scenario == "legacy" {
        let c = connect(url, ProtocolVersion::V_2025_11_25).await?;
        list(&c).await;
        step(&c, "lookup", params("lookup", json!({"key": "a"}), None), 0, None).await;
        step(&c, "delete item", params("delete_item", json!({"id": "item-1"}), None), 0, None).await;
        step(&c, "tool error", params("always_fails", json!({}), None), 0, None).await;
        step(&c, "unknown tool", params("no_such_tool", json!({}), None), 0, None).await;
        step(&c, "invalid arguments", params("lookup", json!({"key": 42}), None), 0, None).await;
        step(&c, "progress", params("count_slowly", json!({"n": 3}), Some(100)), 0, None).await;
        step(&c, "client cancels", params("count_slowly", json!({"n": 30}), Some(101)), 0, cancel_after).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        step(&c, "wrong protocol version", params("lookup", json!({"key": "v"}), None), 0, Some(Duration::from_secs(3))).await;
        step(&c, "garbled body", params("lookup", json!({"key": "g"}), None), 0, Some(Duration::from_secs(3))).await;
        step(&c, "unavailable then resent", params("delete_item", json!({"id": "item-2"}), None), 1, None).await;
        let got = step(&c, "session lost", params("count_slowly", json!({"n": 3}), Some(102)), 1, Some(Duration::from_secs(5))).await;
        let _ = c.cancel().await;
        if got == "call_error" {
            say(json!({"step": "reconnect", "start": now()}));
            let c = connect(url, ProtocolVersion::V_2025_11_25).await?;
            step(&c, "resent in new session", params("count_slowly", json!({"n": 3}), Some(103)), 0, None).await;
            let _ = c.cancel().await;
        }
    } else {
        let c = connect(url, ProtocolVersion::V_2026_07_28).await?;
        list(&c).await;
        step(&c, "lookup", params("lookup", json!({"key": "a"}), None), 0, None).await;
        step(&c, "unavailable then resent", params("delete_item", json!({"id": "item-1"}), None), 1, None).await;
        step(&c, "tool error", params("always_fails", json!({}), None), 0, None).await;
        step(&c, "invalid arguments", params("lookup", json!({"key": 42}), None), 0, None).await;
        step(&c, "cut then resent", params("count_slowly", json!({"n": 3}), Some(100)), 1, Some(Duration::from_secs(5))).await;
        step(&c, "client cancels", params("count_slowly", json!({"n": 30}), Some(101)), 0, cancel_after).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let _ = c.cancel().await;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let scenario = std::env::var("MCP_SCENARIO").unwrap_or_default();
    match std::env::args().nth(1).as_deref() {
        Some("server") => serve(std::env::var("MCP_PORT")?.parse()?).await,
        Some("client") => drive(&std::env::var("MCP_URL")?, &scenario).await,
        _ => anyhow::bail!("usage: rmcprec server|client"),
    }
}

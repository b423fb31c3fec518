//! `troupe-node --config FILE`: one Troupe node as an OS process (what `troupe node` runs).
//! Exit codes, as `troupe node`'s (the table in the `troupe` binary's `main.rs`): 0 on a clean
//! stop (`quit`, SIGINT, SIGTERM), 2 for bad usage or an invalid configuration, 4 for a config
//! file that cannot be read or an address that cannot be bound, 1 for any other error.
//!
//! Built with the feature `otel` and run with `TROUPE_NODE_OTEL_REPORT=1`, it also records
//! OpenTelemetry spans (an SDK tracer under `tracing-opentelemetry`) and prints one stdout line
//! per `troupe.remote.receive` span that ends: `trace TRACE_ID span SPAN_ID parent
//! PARENT_SPAN_ID kind KIND actor ACTOR` (ids in lowercase hex). The tests read these lines
//! (`tests/remote_otel.rs`); without the variable the node runs exactly as without the feature.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = match args.as_slice() {
        [_, flag, path] if flag == "--config" => path.clone(),
        _ => {
            eprintln!("usage: troupe-node --config FILE");
            std::process::exit(2);
        }
    };
    #[cfg(feature = "otel")]
    let _report = (std::env::var_os("TROUPE_NODE_OTEL_REPORT").is_some_and(|v| v == "1")).then(report::install);
    if let Err(e) = troupe_remote::cli::node_main(std::path::Path::new(&path)) {
        eprintln!("troupe-node: {}", troupe::error_chain(&e));
        std::process::exit(match e.kind {
            troupe_remote::ErrorKind::Config(_) => 2,
            troupe_remote::ErrorKind::Io(_) => 4,
            _ => 1,
        });
    }
}

#[cfg(feature = "otel")]
mod report {
    //! The `trace ...` report lines (see the file's doc).

    use std::io::Write;
    use std::time::Duration;

    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanProcessor};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;

    /// Prints a line for each receive span that ends.
    #[derive(Debug)]
    struct Report;

    impl SpanProcessor for Report {
        fn on_start(&self, _: &mut opentelemetry_sdk::trace::Span, _: &opentelemetry::Context) {}

        fn on_end(&self, span: SpanData) {
            if span.name != troupe_remote::otel::RECEIVE_SPAN {
                return;
            }
            let field = |k: &str| {
                span.attributes
                    .iter()
                    .find(|kv| kv.key.as_str() == k)
                    .map(|kv| kv.value.to_string())
                    .unwrap_or_default()
            };
            let sc = &span.span_context;
            let line = format!(
                "trace {} span {} parent {} kind {} actor {}",
                sc.trace_id(),
                sc.span_id(),
                span.parent_span_id,
                field("kind"),
                field("actor")
            );
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }

        fn force_flush(&self) -> OTelSdkResult {
            Ok(())
        }

        fn shutdown_with_timeout(&self, _: Duration) -> OTelSdkResult {
            Ok(())
        }
    }

    /// Installs the global subscriber: the node's usual stderr log (`TROUPE_LOG`, default
    /// `warn`) and OpenTelemetry spans of this crate at INFO. `node_main` then keeps it.
    pub(super) fn install() -> SdkTracerProvider {
        let provider = SdkTracerProvider::builder().with_span_processor(Report).build();
        let otel = tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("troupe-node"))
            .with_filter(tracing_subscriber::filter::Targets::new().with_target("troupe_remote", tracing::Level::INFO));
        let log = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(tracing_subscriber::EnvFilter::try_from_env("TROUPE_LOG").unwrap_or_else(|_| "warn".into()));
        tracing_subscriber::registry().with(log).with(otel).init();
        provider
    }
}

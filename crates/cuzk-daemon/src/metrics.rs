//! What the daemon shows of itself: the Prometheus text exposition
//! (`GetMetrics` and HTTP `GET /metrics` on the status address), the
//! `GetStatus` answer, and the HTTP status server (`GET /status` is that
//! answer as JSON).

use std::convert::Infallible;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};

use crate::daemon::{total, Daemon, LATENCY_BUCKETS};
use crate::kinds::{kind_label, KINDS};
use crate::proto::{srs_status, GetStatusResponse, GpuStatus, QueueStatus, SrsStatus};
use crate::srs::Tier;

/// Host memory pinned per CUDA prover worker: cuzk-gpu's two 64 MiB
/// staging buffers.
const PINNED_PER_GPU_WORKER: u64 = 2 * (64 << 20);

/// The `GetStatus` answer.
pub fn status(d: &Daemon) -> GetStatusResponse {
    let counts = d.counts();
    let (current, current_kind) = d
        .oldest_running()
        .map_or((String::new(), String::new()), |(id, k)| {
            (id, k.as_str_name().to_string())
        });
    let gpus = d
        .devices()
        .iter()
        .filter_map(|dev| {
            let gpu = dev.gpu.as_ref()?;
            let (used, capacity) = dev.admission.usage();
            Some(GpuStatus {
                ordinal: gpu.ordinal,
                name: gpu.model.clone(),
                vram_total_bytes: gpu.vram_total,
                vram_free_bytes: capacity.saturating_sub(used),
                current_job_id: current.clone(),
                current_proof_kind: current_kind.clone(),
            })
        })
        .collect();
    let loaded_srs = d
        .srs()
        .statuses()
        .into_iter()
        .map(|s| SrsStatus {
            circuit_id: s.circuit_id.into(),
            tier: match s.tier {
                _ if s.loading => srs_status::Tier::Loading,
                Tier::Hot => srs_status::Tier::Hot,
                Tier::Warm => srs_status::Tier::Warm,
                Tier::Cold => srs_status::Tier::Cold,
            } as i32,
            size_bytes: s.size_bytes,
            ref_count: s.ref_count,
        })
        .collect();
    let queues = KINDS
        .iter()
        .enumerate()
        .map(|(i, k)| QueueStatus {
            proof_kind: k.as_str_name().into(),
            pending: counts.queued[i],
            in_progress: counts.running[i],
        })
        .collect();
    let pinned: u64 = d
        .devices()
        .iter()
        .filter(|dev| dev.gpu.is_some())
        .map(|dev| dev.workers as u64 * PINNED_PER_GPU_WORKER)
        .sum();
    let stats = d.stats();
    GetStatusResponse {
        gpus,
        loaded_srs,
        queues,
        total_proofs_completed: total(&stats.completed),
        total_proofs_failed: total(&stats.failed),
        uptime_seconds: d.uptime().as_secs(),
        pinned_memory_bytes: pinned,
        pinned_memory_limit_bytes: pinned,
    }
}

/// The `GetStatus` answer as JSON, for `GET /status`.
pub fn status_json(d: &Daemon) -> String {
    let s = status(d);
    let tier = |t: i32| srs_status::Tier::try_from(t).map_or("UNKNOWN", |t| t.as_str_name());
    serde_json::json!({
        "gpus": s.gpus.iter().map(|g| serde_json::json!({
            "ordinal": g.ordinal, "name": g.name, "vram_total_bytes": g.vram_total_bytes,
            "vram_free_bytes": g.vram_free_bytes, "current_job_id": g.current_job_id,
            "current_proof_kind": g.current_proof_kind,
        })).collect::<Vec<_>>(),
        // Not in the wire's GPUStatus: which HOT keys each GPU holds.
        "resident_keys": d.srs().resident().iter().map(|k| serde_json::json!({
            "device": k.device, "circuit_id": k.circuit_id, "vram_bytes": k.vram_bytes,
        })).collect::<Vec<_>>(),
        "loaded_srs": s.loaded_srs.iter().map(|k| serde_json::json!({
            "circuit_id": k.circuit_id, "tier": tier(k.tier), "size_bytes": k.size_bytes,
            "ref_count": k.ref_count,
        })).collect::<Vec<_>>(),
        "queues": s.queues.iter().map(|q| serde_json::json!({
            "proof_kind": q.proof_kind, "pending": q.pending, "in_progress": q.in_progress,
        })).collect::<Vec<_>>(),
        "total_proofs_completed": s.total_proofs_completed,
        "total_proofs_failed": s.total_proofs_failed,
        "uptime_seconds": s.uptime_seconds,
        "pinned_memory_bytes": s.pinned_memory_bytes,
        "pinned_memory_limit_bytes": s.pinned_memory_limit_bytes,
    })
    .to_string()
}

/// One metric family's header.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// The Prometheus text exposition (format 0.0.4).
pub fn prometheus_text(d: &Daemon) -> String {
    let mut o = String::new();
    let counts = d.counts();
    let stats = d.stats();
    let kinds: Vec<String> = KINDS.iter().map(|k| kind_label(*k)).collect();

    family(
        &mut o,
        "cuzk_uptime_seconds",
        "gauge",
        "Seconds since the daemon started.",
    );
    let _ = writeln!(o, "cuzk_uptime_seconds {}", d.uptime().as_secs_f64());

    family(
        &mut o,
        "cuzk_jobs_queued",
        "gauge",
        "Jobs accepted and not yet in the engine.",
    );
    for (kind, n) in kinds.iter().zip(counts.queued) {
        let _ = writeln!(o, "cuzk_jobs_queued{{kind=\"{kind}\"}} {n}");
    }
    family(&mut o, "cuzk_jobs_running", "gauge", "Jobs in the engine.");
    for (kind, n) in kinds.iter().zip(counts.running) {
        let _ = writeln!(o, "cuzk_jobs_running{{kind=\"{kind}\"}} {n}");
    }
    family(
        &mut o,
        "cuzk_results_retained",
        "gauge",
        "Finished jobs whose results are kept for AwaitProof.",
    );
    let _ = writeln!(o, "cuzk_results_retained {}", counts.finished);
    family(
        &mut o,
        "cuzk_queued_vanilla_bytes",
        "gauge",
        "Vanilla-proof bytes held for unfinished jobs.",
    );
    let _ = writeln!(o, "cuzk_queued_vanilla_bytes {}", counts.unfinished_bytes);

    family(
        &mut o,
        "cuzk_jobs_accepted",
        "counter",
        "Jobs accepted by SubmitProof or Prove.",
    );
    for (kind, n) in kinds.iter().zip(&stats.accepted) {
        let _ = writeln!(
            o,
            "cuzk_jobs_accepted_total{{kind=\"{kind}\"}} {}",
            n.load(Ordering::Relaxed)
        );
    }
    family(
        &mut o,
        "cuzk_proofs_completed",
        "counter",
        "Proofs made, verified and kept for delivery.",
    );
    for (kind, n) in kinds.iter().zip(&stats.completed) {
        let _ = writeln!(
            o,
            "cuzk_proofs_completed_total{{kind=\"{kind}\"}} {}",
            n.load(Ordering::Relaxed)
        );
    }
    family(
        &mut o,
        "cuzk_proofs_failed",
        "counter",
        "Jobs that ended without a valid proof.",
    );
    for (kind, n) in kinds.iter().zip(&stats.failed) {
        let _ = writeln!(
            o,
            "cuzk_proofs_failed_total{{kind=\"{kind}\"}} {}",
            n.load(Ordering::Relaxed)
        );
    }
    family(
        &mut o,
        "cuzk_proofs_cancelled",
        "counter",
        "Jobs cancelled by CancelProof.",
    );
    for (kind, n) in kinds.iter().zip(&stats.cancelled) {
        let _ = writeln!(
            o,
            "cuzk_proofs_cancelled_total{{kind=\"{kind}\"}} {}",
            n.load(Ordering::Relaxed)
        );
    }
    family(
        &mut o,
        "cuzk_results_dropped",
        "counter",
        "Undelivered results dropped because retention was full.",
    );
    let _ = writeln!(
        o,
        "cuzk_results_dropped_total {}",
        stats.results_dropped.load(Ordering::Relaxed)
    );
    family(
        &mut o,
        "cuzk_requests_rejected",
        "counter",
        "Submissions refused, by gRPC status code.",
    );
    for (code, n) in stats.rejected.lock().iter() {
        let _ = writeln!(o, "cuzk_requests_rejected_total{{code=\"{code}\"}} {n}");
    }

    family(
        &mut o,
        "cuzk_proof_duration_seconds",
        "histogram",
        "Acceptance to verified proof, completed jobs.",
    );
    let histograms = stats.latency.lock().clone();
    for (kind, h) in kinds.iter().zip(histograms) {
        let mut cumulative = 0;
        for (bound, n) in LATENCY_BUCKETS.iter().zip(h.counts) {
            cumulative += n;
            let _ = writeln!(
                o,
                "cuzk_proof_duration_seconds_bucket{{kind=\"{kind}\",le=\"{bound}\"}} {cumulative}"
            );
        }
        let _ = writeln!(
            o,
            "cuzk_proof_duration_seconds_bucket{{kind=\"{kind}\",le=\"+Inf\"}} {}",
            h.count
        );
        let _ = writeln!(
            o,
            "cuzk_proof_duration_seconds_sum{{kind=\"{kind}\"}} {}",
            h.sum
        );
        let _ = writeln!(
            o,
            "cuzk_proof_duration_seconds_count{{kind=\"{kind}\"}} {}",
            h.count
        );
    }

    let m = d.engine_metrics();
    family(
        &mut o,
        "cuzk_stage_busy_fraction",
        "gauge",
        "Busy time over workers x uptime, per pipeline stage.",
    );
    for s in &m.stages {
        let _ = writeln!(
            o,
            "cuzk_stage_busy_fraction{{stage=\"{}\"}} {}",
            s.stage.as_str(),
            s.busy_fraction
        );
    }
    family(
        &mut o,
        "cuzk_stage_queued",
        "gauge",
        "Partitions waiting in front of each stage.",
    );
    for s in &m.stages {
        let _ = writeln!(
            o,
            "cuzk_stage_queued{{stage=\"{}\"}} {}",
            s.stage.as_str(),
            s.queued
        );
    }
    family(
        &mut o,
        "cuzk_stage_busy_workers",
        "gauge",
        "Workers busy now, per stage.",
    );
    for s in &m.stages {
        let _ = writeln!(
            o,
            "cuzk_stage_busy_workers{{stage=\"{}\"}} {}",
            s.stage.as_str(),
            s.busy_workers
        );
    }
    family(&mut o, "cuzk_stage_workers", "gauge", "Workers per stage.");
    for s in &m.stages {
        let _ = writeln!(
            o,
            "cuzk_stage_workers{{stage=\"{}\"}} {}",
            s.stage.as_str(),
            s.workers
        );
    }
    family(
        &mut o,
        "cuzk_engine_memory_reserved_bytes",
        "gauge",
        "Host memory the engine has reserved for partitions in flight.",
    );
    let _ = writeln!(o, "cuzk_engine_memory_reserved_bytes {}", m.memory.reserved);
    family(
        &mut o,
        "cuzk_engine_memory_budget_bytes",
        "gauge",
        "The host-memory budget shared by partitions and hot keys.",
    );
    let _ = writeln!(o, "cuzk_engine_memory_budget_bytes {}", m.memory.budget);
    family(
        &mut o,
        "cuzk_engine_memory_lent_bytes",
        "gauge",
        "Of that budget, lent to hot proving keys (the partitions get the rest).",
    );
    let _ = writeln!(o, "cuzk_engine_memory_lent_bytes {}", m.memory.lent);
    family(
        &mut o,
        "cuzk_engine_partitions_in_flight",
        "gauge",
        "Partitions admitted into the engine and not finished.",
    );
    let _ = writeln!(
        o,
        "cuzk_engine_partitions_in_flight {}",
        m.memory.partitions_in_flight
    );

    family(
        &mut o,
        "cuzk_srs_tier",
        "gauge",
        "1 for each key's current tier.",
    );
    let keys = d.srs().statuses();
    for k in &keys {
        for t in Tier::ALL {
            let _ = writeln!(
                o,
                "cuzk_srs_tier{{circuit_id=\"{}\",tier=\"{}\"}} {}",
                k.circuit_id,
                t.as_str(),
                u8::from(k.tier == t)
            );
        }
    }
    family(
        &mut o,
        "cuzk_srs_loading",
        "gauge",
        "1 while a key is being read in by its loader thread.",
    );
    for k in &keys {
        let _ = writeln!(
            o,
            "cuzk_srs_loading{{circuit_id=\"{}\"}} {}",
            k.circuit_id,
            u8::from(k.loading)
        );
    }
    family(
        &mut o,
        "cuzk_srs_size_bytes",
        "gauge",
        "Each key's size (parsed when hot, the file otherwise).",
    );
    for k in &keys {
        let _ = writeln!(
            o,
            "cuzk_srs_size_bytes{{circuit_id=\"{}\"}} {}",
            k.circuit_id, k.size_bytes
        );
    }
    family(
        &mut o,
        "cuzk_srs_ref_count",
        "gauge",
        "Running jobs holding each key.",
    );
    for k in &keys {
        let _ = writeln!(
            o,
            "cuzk_srs_ref_count{{circuit_id=\"{}\"}} {}",
            k.circuit_id, k.ref_count
        );
    }
    family(
        &mut o,
        "cuzk_srs_hot_bytes",
        "gauge",
        "Host memory of hot keys.",
    );
    let _ = writeln!(o, "cuzk_srs_hot_bytes {}", d.srs().hot_bytes());
    family(
        &mut o,
        "cuzk_srs_host_budget_bytes",
        "gauge",
        "Host-memory budget for hot keys.",
    );
    let _ = writeln!(o, "cuzk_srs_host_budget_bytes {}", d.srs().budget());
    family(
        &mut o,
        "cuzk_srs_transitions",
        "counter",
        "Key tier transitions.",
    );
    for ((from, to), n) in d.srs().transitions() {
        let _ = writeln!(
            o,
            "cuzk_srs_transitions_total{{from=\"{}\",to=\"{}\"}} {n}",
            from.as_str(),
            to.as_str()
        );
    }

    family(
        &mut o,
        "cuzk_vram_arena_used_bytes",
        "gauge",
        "VRAM admitted to partitions and resident keys, per GPU.",
    );
    for dev in d.devices().iter().filter(|dev| dev.gpu.is_some()) {
        let _ = writeln!(
            o,
            "cuzk_vram_arena_used_bytes{{device=\"{}\"}} {}",
            dev.name,
            dev.admission.usage().0
        );
    }
    family(
        &mut o,
        "cuzk_vram_arena_capacity_bytes",
        "gauge",
        "Each GPU's VRAM arena.",
    );
    for dev in d.devices().iter().filter(|dev| dev.gpu.is_some()) {
        let _ = writeln!(
            o,
            "cuzk_vram_arena_capacity_bytes{{device=\"{}\"}} {}",
            dev.name,
            dev.admission.usage().1
        );
    }
    device_key_metrics(&mut o, d);
    family(
        &mut o,
        "cuzk_host_resident_bytes",
        "gauge",
        "The daemon's resident set size.",
    );
    let _ = writeln!(o, "cuzk_host_resident_bytes {}", resident_bytes());
    o
}

/// Resident set size from /proc/self/statm (pages × page size).
fn resident_bytes() -> u64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0);
    // The page size of every Linux platform cuzk builds for.
    pages * 4096
}

fn respond(d: &Daemon, req: &Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match (req.method().as_str(), req.uri().path()) {
        ("GET", "/metrics") => (
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            prometheus_text(d),
        ),
        ("GET", "/status") => (StatusCode::OK, "application/json", status_json(d)),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "cuzk daemon: GET /metrics or GET /status\n".to_string(),
        ),
    };
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .expect("a static response")
}

/// Serves `GET /metrics` and `GET /status` on `listener` until `stop` is set.
pub async fn serve_status(
    listener: tokio::net::TcpListener,
    daemon: Arc<Daemon>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((s, _)) => s,
                    Err(e) => {
                        tracing::warn!(error = %e, "status server: accept failed");
                        continue;
                    }
                };
                let d = Arc::clone(&daemon);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let d = Arc::clone(&d);
                        async move { Ok::<_, Infallible>(respond(&d, &req)) }
                    });
                    if let Err(e) = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await
                    {
                        tracing::debug!(error = %e, "status server connection");
                    }
                });
            }
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// The keys resident in each GPU's VRAM (none on the CPU backend, which
/// has no device slot: HOT keys live in host memory only).
fn device_key_metrics(o: &mut String, d: &Daemon) {
    family(
        o,
        "cuzk_gpu_resident_key_bytes",
        "gauge",
        "VRAM bytes of each HOT key resident on a GPU.",
    );
    for k in d.srs().resident() {
        let _ = writeln!(
            o,
            "cuzk_gpu_resident_key_bytes{{device=\"{}\",circuit_id=\"{}\"}} {}",
            k.device, k.circuit_id, k.vram_bytes
        );
    }
    let usage = d.srs().device_usage();
    for (name, kind, help, value) in [
        (
            "cuzk_gpu_resident_keys",
            "gauge",
            "Keys resident on each GPU now.",
            (|u: &cuzk_gpu::SlotUsage| u.keys as u64) as fn(&cuzk_gpu::SlotUsage) -> u64,
        ),
        (
            "cuzk_gpu_key_uploads_total",
            "counter",
            "Keys uploaded to each GPU.",
            |u| u.uploads,
        ),
        (
            "cuzk_gpu_key_evictions_total",
            "counter",
            "Keys dropped from each GPU (left HOT, evicted for a partition's room, replaced).",
            |u| u.evictions,
        ),
    ] {
        let family_name = name.trim_end_matches("_total");
        family(o, family_name, kind, help);
        for (device, u) in &usage {
            let _ = writeln!(o, "{name}{{device=\"{device}\"}} {}", value(u));
        }
    }
}

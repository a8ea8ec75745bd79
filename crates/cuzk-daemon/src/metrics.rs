//! What the daemon shows of itself: the Prometheus exposition
//! (OpenMetrics text written by `prometheus-client`; `GetMetrics` and
//! HTTP `GET /metrics` on the status address), the
//! `GetStatus` answer, and the HTTP status server (`GET /status` is that
//! answer as JSON).

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::daemon::{total, Daemon, LATENCY_BUCKETS};
use crate::kinds::{kind_label, KINDS};
use crate::proto::{srs_status, GetStatusResponse, GpuStatus, ProofKind, QueueStatus, SrsStatus};
use crate::srs::Tier;

/// Host memory pinned per CUDA prover worker: cuzk-gpu's two 64 MiB
/// staging buffers.
const PINNED_PER_GPU_WORKER: u64 = 2 * (64 << 20);

/// The `GetStatus` answer.
pub(crate) fn status(d: &Daemon) -> GetStatusResponse {
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
pub(crate) fn status_json(d: &Daemon) -> String {
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
        // Not in the wire's answer: jobs restored from the journal still
        // being checked again, and GPUs out of service with their fault.
        "recovering_jobs": d.counts().recovering,
        // Not in the wire's answer: each job in the engine, with its
        // partitions proved and in all (a non-interactive PoRep has 13 or
        // 126, an interactive one 1 or 10).
        "jobs": d.running_jobs().iter().map(|j| serde_json::json!({
            "job_id": j.job_id, "request_id": j.request_id, "proof_kind": j.kind.as_str_name(),
            "circuit": j.circuit, "partitions_proved": j.partitions_proved,
            "partitions": j.partitions,
        })).collect::<Vec<_>>(),
        // What proves on each device: backend, model, driver, kernel build.
        "workers": d.devices().iter().map(|dev| serde_json::json!({
            "device": dev.name, "backend": dev.build.backend, "model": dev.build.model,
            "driver": dev.build.driver, "kernels": dev.build.kernels,
            "prover_workers": dev.workers,
        })).collect::<Vec<_>>(),
        "out_of_service": d.devices().iter().filter_map(|dev| {
            let why = dev.health.as_ref()?.out_of_service()?;
            Some(serde_json::json!({"device": dev.name, "fault": why}))
        }).collect::<Vec<_>>(),
        "total_proofs_completed": s.total_proofs_completed,
        "total_proofs_failed": s.total_proofs_failed,
        "uptime_seconds": s.uptime_seconds,
        "pinned_memory_bytes": s.pinned_memory_bytes,
        "pinned_memory_limit_bytes": s.pinned_memory_limit_bytes,
    })
    .to_string()
}

/// A metric's labels, as `prometheus-client` encodes them.
type Labels = Vec<(&'static str, String)>;

/// The metrics of one scrape, registered into `prometheus-client`'s
/// registry with the values read now, and encoded by it.
struct Scrape {
    registry: Registry,
}

impl Scrape {
    fn new() -> Self {
        Scrape {
            registry: Registry::default(),
        }
    }

    /// A gauge family: one sample per label set (none: a plain gauge).
    fn gauge(&mut self, name: &str, help: &str, samples: impl IntoIterator<Item = (Labels, f64)>) {
        let family = Family::<Labels, Gauge<f64, AtomicU64>>::default();
        for (labels, value) in samples {
            family.get_or_create(&labels).set(value);
        }
        self.registry.register(name, help, family);
    }

    /// A gauge without labels.
    fn one(&mut self, name: &str, help: &str, value: f64) {
        let gauge = Gauge::<f64, AtomicU64>::default();
        gauge.set(value);
        self.registry.register(name, help, gauge);
    }

    /// A counter family (`name` without `_total`, which the encoder adds),
    /// at the totals counted now.
    fn counter(
        &mut self,
        name: &str,
        help: &str,
        samples: impl IntoIterator<Item = (Labels, u64)>,
    ) {
        let family = Family::<Labels, Counter>::default();
        for (labels, value) in samples {
            family.get_or_create(&labels).inc_by(value);
        }
        self.registry.register(name, help, family);
    }

    /// A counter without labels.
    fn counted(&mut self, name: &str, help: &str, value: u64) {
        let counter = Counter::<u64>::default();
        counter.inc_by(value);
        self.registry.register(name, help, counter);
    }

    fn text(self) -> String {
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing to a String does not fail");
        out
    }
}

fn label(key: &'static str, value: impl Into<String>) -> Labels {
    vec![(key, value.into())]
}

/// The proof latency histogram per kind (`cuzk_proof_duration_seconds`),
/// kept from the start; every kind present from the start, at zero.
#[derive(Debug, Clone)]
pub(crate) struct Latency(Family<Labels, Histogram, fn() -> Histogram>);

impl Default for Latency {
    fn default() -> Self {
        let family: Family<Labels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(|| Histogram::new(LATENCY_BUCKETS.iter().copied()));
        for k in KINDS {
            drop(family.get_or_create(&label("kind", kind_label(k))));
        }
        Latency(family)
    }
}

impl Latency {
    /// Records a completed proof of `kind` that took `seconds`.
    pub(crate) fn observe(&self, kind: ProofKind, seconds: f64) {
        self.0
            .get_or_create(&label("kind", kind_label(kind)))
            .observe(seconds);
    }
}

/// The Prometheus exposition (OpenMetrics text, through `prometheus-client`).
pub(crate) fn prometheus_text(d: &Daemon) -> String {
    let mut o = Scrape::new();
    let counts = d.counts();
    let stats = d.stats();
    let kinds: Vec<String> = KINDS.iter().map(|k| kind_label(*k)).collect();
    let per_kind = |values: [u32; 4]| -> Vec<(Labels, f64)> {
        kinds
            .iter()
            .zip(values)
            .map(|(k, n)| (label("kind", k.clone()), n as f64))
            .collect()
    };
    let per_kind_total = |counters: &[std::sync::atomic::AtomicU64; 4]| -> Vec<(Labels, u64)> {
        kinds
            .iter()
            .zip(counters)
            .map(|(k, n)| (label("kind", k.clone()), n.load(Ordering::Relaxed)))
            .collect()
    };

    o.one(
        "cuzk_uptime_seconds",
        "Seconds since the daemon started.",
        d.uptime().as_secs_f64(),
    );
    o.gauge(
        "cuzk_jobs_queued",
        "Jobs accepted and not yet in the engine.",
        per_kind(counts.queued),
    );
    o.gauge(
        "cuzk_jobs_running",
        "Jobs in the engine.",
        per_kind(counts.running),
    );
    o.one(
        "cuzk_results_retained",
        "Finished jobs whose results are kept for AwaitProof.",
        counts.finished as f64,
    );
    o.one(
        "cuzk_jobs_recovering",
        "Jobs restored from the journal whose requests are being checked again (counted in cuzk_jobs_queued).",
        counts.recovering as f64,
    );
    o.counted(
        "cuzk_job_panics",
        "Jobs whose thread panicked (each failed with the panic's message).",
        stats.job_panics.load(Ordering::Relaxed),
    );
    o.one(
        "cuzk_request_memory_used_bytes",
        "Memory held by requests being checked (of limits.request_memory).",
        d.checking_used() as f64,
    );
    o.gauge(
        "cuzk_worker_info",
        "1 for each proving device, labelled with its backend, model, driver and kernel build.",
        d.devices().iter().map(|dev| {
            let b = &dev.build;
            (
                vec![
                    ("device", dev.name.clone()),
                    ("backend", b.backend.to_string()),
                    ("model", b.model.clone()),
                    ("driver", b.driver.clone()),
                    ("kernels", b.kernels.clone()),
                ],
                1.0,
            )
        }),
    );
    o.gauge(
        "cuzk_device_out_of_service",
        "1 for a GPU a fault took out of service (its partitions are proved on the fallback).",
        d.devices().iter().filter_map(|dev| {
            let h = dev.health.as_ref()?;
            Some((
                label("device", dev.name.clone()),
                f64::from(u8::from(h.out_of_service().is_some())),
            ))
        }),
    );
    o.one(
        "cuzk_queued_vanilla_bytes",
        "Vanilla-proof bytes held for unfinished jobs.",
        counts.unfinished_bytes as f64,
    );
    for (name, help, per_kind) in [
        (
            "cuzk_jobs_accepted",
            "Jobs accepted by SubmitProof or Prove.",
            &stats.accepted,
        ),
        (
            "cuzk_proofs_completed",
            "Proofs made, verified and kept for delivery.",
            &stats.completed,
        ),
        (
            "cuzk_proofs_failed",
            "Jobs that ended without a valid proof.",
            &stats.failed,
        ),
        (
            "cuzk_proofs_cancelled",
            "Jobs cancelled by CancelProof.",
            &stats.cancelled,
        ),
        (
            "cuzk_partitions_proved",
            "Partitions proved in the engine, per kind of job (a non-interactive PoRep has 13 or 126).",
            &stats.partitions_proved,
        ),
    ] {
        o.counter(name, help, per_kind_total(per_kind));
    }
    o.counted(
        "cuzk_results_dropped",
        "Undelivered results dropped because retention was full.",
        stats.results_dropped.load(Ordering::Relaxed),
    );
    let rejected: Vec<(Labels, u64)> = stats
        .rejected
        .lock()
        .iter()
        .map(|(code, n)| (label("code", *code), *n))
        .collect();
    o.counter(
        "cuzk_requests_rejected",
        "Submissions refused, by gRPC status code.",
        rejected,
    );
    o.registry.register(
        "cuzk_proof_duration_seconds",
        "Acceptance to verified proof, completed jobs.",
        stats.latency.0.clone(),
    );

    let m = d.engine_metrics();
    type StageValue = fn(&cuzk_pipeline::StageMetrics) -> f64;
    let stage_gauges: [(&str, &str, StageValue); 4] = [
        (
            "cuzk_stage_busy_fraction",
            "Busy time over workers x uptime, per pipeline stage.",
            |s| s.busy_fraction,
        ),
        (
            "cuzk_stage_queued",
            "Partitions waiting in front of each stage.",
            |s| s.queued as f64,
        ),
        (
            "cuzk_stage_busy_workers",
            "Workers busy now, per stage.",
            |s| s.busy_workers as f64,
        ),
        ("cuzk_stage_workers", "Workers per stage.", |s| {
            s.workers as f64
        }),
    ];
    for (name, help, value) in stage_gauges {
        o.gauge(
            name,
            help,
            m.stages
                .iter()
                .map(|s| (label("stage", s.stage.as_str()), value(s))),
        );
    }
    for (name, help, value) in [
        (
            "cuzk_engine_memory_reserved_bytes",
            "Host memory the engine has reserved for partitions in flight.",
            m.memory.reserved as f64,
        ),
        (
            "cuzk_engine_memory_budget_bytes",
            "The host-memory budget shared by partitions and hot keys.",
            m.memory.budget as f64,
        ),
        (
            "cuzk_engine_memory_lent_bytes",
            "Of that budget, lent to hot proving keys (the partitions get the rest).",
            m.memory.lent as f64,
        ),
        (
            "cuzk_engine_partitions_in_flight",
            "Partitions admitted into the engine and not finished.",
            m.memory.partitions_in_flight as f64,
        ),
    ] {
        o.one(name, help, value);
    }

    let keys = d.srs().statuses();
    o.gauge(
        "cuzk_srs_tier",
        "1 for each key's current tier.",
        keys.iter().flat_map(|k| {
            Tier::ALL.into_iter().map(move |t| {
                (
                    vec![
                        ("circuit_id", k.circuit_id.to_string()),
                        ("tier", t.as_str().to_string()),
                    ],
                    f64::from(u8::from(k.tier == t)),
                )
            })
        }),
    );
    type KeyValue = fn(&crate::srs::SrsStatus) -> f64;
    let key_gauges: [(&str, &str, KeyValue); 3] = [
        (
            "cuzk_srs_loading",
            "1 while a key is being read in by its loader thread.",
            |k| f64::from(u8::from(k.loading)),
        ),
        (
            "cuzk_srs_size_bytes",
            "Each key's size (parsed when hot, the file otherwise).",
            |k| k.size_bytes as f64,
        ),
        (
            "cuzk_srs_ref_count",
            "Running jobs holding each key.",
            |k| f64::from(k.ref_count),
        ),
    ];
    for (name, help, value) in key_gauges {
        o.gauge(
            name,
            help,
            keys.iter()
                .map(|k| (label("circuit_id", k.circuit_id), value(k))),
        );
    }
    o.one(
        "cuzk_srs_hot_bytes",
        "Host memory of hot keys.",
        d.srs().hot_bytes() as f64,
    );
    o.one(
        "cuzk_srs_host_budget_bytes",
        "Host-memory budget for hot keys.",
        d.srs().budget() as f64,
    );
    o.counter(
        "cuzk_srs_transitions",
        "Key tier transitions.",
        d.srs().transitions().into_iter().map(|((from, to), n)| {
            (
                vec![
                    ("from", from.as_str().to_string()),
                    ("to", to.as_str().to_string()),
                ],
                n,
            )
        }),
    );

    let gpus: Vec<_> = d.devices().iter().filter(|dev| dev.gpu.is_some()).collect();
    // The arena's (used, capacity) per GPU.
    type ArenaValue = fn((u64, u64)) -> u64;
    let arena_gauges: [(&str, &str, ArenaValue); 2] = [
        (
            "cuzk_vram_arena_used_bytes",
            "VRAM admitted to partitions and resident keys, per GPU.",
            |(used, _)| used,
        ),
        (
            "cuzk_vram_arena_capacity_bytes",
            "Each GPU's VRAM arena.",
            |(_, capacity)| capacity,
        ),
    ];
    for (name, help, value) in arena_gauges {
        o.gauge(
            name,
            help,
            gpus.iter().map(|dev| {
                (
                    label("device", dev.name.clone()),
                    value(dev.admission.usage()) as f64,
                )
            }),
        );
    }
    o.gauge(
        "cuzk_gpu_resident_key_bytes",
        "VRAM bytes of each HOT key resident on a GPU.",
        d.srs().resident().into_iter().map(|k| {
            (
                vec![
                    ("device", k.device.to_string()),
                    ("circuit_id", k.circuit_id.to_string()),
                ],
                k.vram_bytes as f64,
            )
        }),
    );
    let usage = d.srs().device_usage();
    o.gauge(
        "cuzk_gpu_resident_keys",
        "Keys resident on each GPU now.",
        usage
            .iter()
            .map(|(device, u)| (label("device", device.to_string()), u.keys as f64)),
    );
    o.counter(
        "cuzk_gpu_key_uploads",
        "Keys uploaded to each GPU.",
        usage
            .iter()
            .map(|(device, u)| (label("device", device.to_string()), u.uploads)),
    );
    o.counter(
        "cuzk_gpu_key_evictions",
        "Keys dropped from each GPU (left HOT, evicted for a partition's room, replaced).",
        usage
            .iter()
            .map(|(device, u)| (label("device", device.to_string()), u.evictions)),
    );
    o.one(
        "cuzk_host_resident_bytes",
        "The daemon's resident set size.",
        resident_bytes() as f64,
    );
    o.text()
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
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
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
pub(crate) async fn serve_status(
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

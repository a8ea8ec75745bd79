//! Starting and stopping the daemon: the parameter cache, the devices and
//! engine, the key manager, the journal, the listeners (gRPC on each
//! address, HTTP on the status address), and the drain on SIGTERM/SIGINT.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cuzk_filecoin::ParamsDir;
use cuzk_gpu::{BackendChoice, GpuConfig, GpuDevice, ResolveError, Resolved, VramBudget};
use cuzk_pipeline::{Device, EngineConfig, Provers, Scheduler};
use cuzk_sched::Engine;
use tokio::signal::unix::{signal, SignalKind};

use crate::config::{Config, ProvingConfig};
use crate::daemon::{Daemon, DeviceView, GpuView, Settings, WorkerBuild};
use crate::error::{ConfigError, DaemonError};
use crate::journal::Journal;
use crate::listen::{bind_unix, ListenAddr};
use crate::proto::cuzk_proving_engine_server::CuzkProvingEngineServer;
use crate::proto::proving_engine_server::ProvingEngineServer;
use crate::service::Service;
use crate::srs::{DeviceKeys, EngineShare, SrsManager};

pub(crate) fn cpu_device() -> (Device, DeviceView) {
    let device = Device::cpu(0, 1);
    let view = DeviceView {
        name: device.name.clone(),
        gpu: None,
        admission: Arc::clone(&device.admission),
        workers: device.workers(),
        health: None,
        build: WorkerBuild {
            backend: "cpu",
            model: crate::resources::cpu_model(),
            driver: "none".into(),
            kernels: "none".into(),
        },
    };
    (device, view)
}

/// The NVIDIA driver as the start-up log and `/status` name it: the kernel
/// module's version and the CUDA version it supports.
fn driver_label() -> String {
    let module = crate::doctor::driver_here().unwrap_or_else(|| "unknown".into());
    match cuzk_gpu::driver_version() {
        Ok(v) => format!("{module} (CUDA {}.{})", v / 1000, v % 1000 / 10),
        Err(_) => module,
    }
}

/// A GPU opened by `cuzk_gpu` as an engine device (its workers under a
/// health guard) and the daemon's view of it.
fn gpu_device(gpu: GpuDevice) -> (Device, DeviceView) {
    let device = gpu.pipeline_device();
    let health = crate::health::DeviceHealth::new(device.name.clone());
    let device = crate::health::guard(device, &health);
    let info = gpu.info();
    let (major, minor) = info.compute_capability;
    let view = DeviceView {
        name: device.name.clone(),
        gpu: Some(GpuView {
            ordinal: info.ordinal as u32,
            model: info.name.clone(),
            vram_total: info.total_memory as u64,
            // The device's workers share one slot of resident keys: kept
            // here so that a key leaving HOT leaves the GPU too, and the
            // status shows it.
            keys: gpu.resident_keys(),
        }),
        admission: Arc::clone(&device.admission),
        workers: device.workers(),
        health: Some(health),
        build: WorkerBuild {
            backend: "cuda",
            model: format!("{} (sm_{major}{minor})", info.name),
            driver: driver_label(),
            kernels: cuzk_gpu::kernels::describe(),
        },
    };
    (device, view)
}

fn select_devices(p: &ProvingConfig) -> Result<Vec<(Device, DeviceView)>, DaemonError> {
    let invalid = |key: &'static str, problem: String| {
        DaemonError::Config(ConfigError::Invalid { key, problem })
    };
    let budget = VramBudget::parse(&p.vram_budget)
        .map_err(|problem| invalid("proving.vram_budget", problem.to_string()))?;
    let choice: BackendChoice = p
        .backend
        .parse()
        .map_err(|problem| invalid("proving.backend", problem))?;
    if !p.kernels_dir.is_empty() {
        cuzk_gpu::kernels::use_dir(Some(std::path::PathBuf::from(&p.kernels_dir)));
    }
    let config = GpuConfig::default()
        .with_budget(budget)
        .with_workers(p.gpu_workers);
    let only: Vec<usize> = p.gpus.iter().map(|&g| g as usize).collect();
    // GPUs named in the configuration are wanted even under `auto`.
    let choice = match choice {
        BackendChoice::Auto if !only.is_empty() => BackendChoice::Cuda,
        c => c,
    };
    let resolved = cuzk_gpu::resolve(choice, (!only.is_empty()).then_some(&only[..]), &config);
    let devices = match resolved {
        Ok(Resolved::Cuda(gpus)) => gpus.into_iter().map(gpu_device).collect(),
        Ok(Resolved::Cpu { why }) => {
            if choice == BackendChoice::Auto {
                tracing::info!("proving on the CPU: {why}");
                let cards = crate::resources::nvidia_gpus_on_pci(Path::new(PCI_DEVICES));
                if !cards.is_empty() {
                    return Err(DaemonError::Backend(format!(
                        "this box has NVIDIA GPUs on the PCI bus ({}) but CUDA sees none \
                         (is the NVIDIA driver, R580 or newer, installed and loaded?); \
                         set proving.backend = \"cpu\" (--backend cpu) to prove on the CPU",
                        cards.join(", ")
                    )));
                }
            }
            vec![cpu_device()]
        }
        Err(e @ ResolveError::Unusable { .. }) => {
            return Err(DaemonError::Backend(format!(
                "a CUDA device is present but cannot be used: {e}: {}; set \
                 proving.backend = \"cpu\" (--backend cpu) to prove on the CPU",
                std::error::Error::source(&e).map_or(String::new(), |s| s.to_string())
            )))
        }
        Err(e) => return Err(DaemonError::Backend(e.to_string())),
    };
    for (d, v) in &devices {
        let b = &v.build;
        tracing::info!(
            device = %d.name,
            backend = b.backend,
            model = %b.model,
            driver = %b.driver,
            kernels = %b.kernels,
            workers = d.workers(),
            "proving device"
        );
    }
    Ok(devices)
}

/// The sysfs folder of PCI devices, where a GPU shows without a driver.
const PCI_DEVICES: &str = "/sys/bus/pci/devices";

/// With a 32 GiB WindowPoSt key in the parameter cache and room in the
/// pool, faults in one of its partition's aux vectors now, on a thread of
/// its own: the first WindowPoSt partition then costs what every later one
/// does, and the page faults happen at start, off any deadline.
fn prefill_post_aux_pool(pool: &Arc<cuzk_filecoin::AuxPool>, params: &ParamsDir) {
    let bytes = crate::defaults::window_post_aux_bytes();
    let has_key = crate::srs::circuits()
        .iter()
        .find(|(id, _)| *id == "wpost-32g")
        .and_then(|(_, circuit)| params.params_path(*circuit).ok())
        .is_some_and(|path| path.is_file());
    if !has_key || pool.limit() < bytes {
        return;
    }
    let pool = Arc::clone(pool);
    let values = crate::defaults::window_post_aux_values() as usize;
    let spawned = std::thread::Builder::new()
        .name("post-aux-prefill".into())
        .spawn(move || {
            let clock = std::time::Instant::now();
            let kept = pool.prefill(values);
            tracing::info!(
                kept,
                bytes,
                seconds = clock.elapsed().as_secs_f64(),
                "a 32 GiB WindowPoSt aux vector faulted in for the first partition"
            );
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "could not start the aux pool's prefill; the first WindowPoSt partition faults its vector in");
    }
}

/// Refuses a configuration that preloads a key whose jobs could never run
/// (the key and one of its partitions beyond the host budget), and logs,
/// as errors, every other key in the parameter cache in that state: their
/// jobs will be refused at `SubmitProof`.
fn check_keys_fit(srs: &SrsManager, preload: &[String]) -> Result<(), DaemonError> {
    for id in preload {
        srs.check_id_fits(id).map_err(|e| ConfigError::Invalid {
            key: "srs.preload",
            problem: e.to_string(),
        })?;
    }
    for (id, e) in srs.never_fitting() {
        tracing::error!(
            circuit_id = id,
            "jobs of this key will be refused under this configuration: {e}"
        );
    }
    Ok(())
}

/// gRPC answers a message beyond the receive limit with RESOURCE_EXHAUSTED
/// (Go's and the C core's servers do); tonic says OUT_OF_RANGE, a code none
/// of the daemon's own answers uses. The status travels in the headers of a
/// trailers-only response, so it is rewritten there.
fn oversized_is_resource_exhausted(
    mut response: http::Response<tonic::body::Body>,
) -> http::Response<tonic::body::Body> {
    let out_of_range = (tonic::Code::OutOfRange as i32).to_string();
    let headers = response.headers_mut();
    if headers.get("grpc-status").map(|v| v.as_bytes()) == Some(out_of_range.as_bytes()) {
        let exhausted = (tonic::Code::ResourceExhausted as i32).to_string();
        headers.insert(
            "grpc-status",
            http::HeaderValue::from_str(&exhausted).expect("digits"),
        );
    }
    response
}

/// Runs the daemon until SIGTERM or SIGINT, then drains and returns.
pub(crate) async fn serve(config: Config) -> Result<(), DaemonError> {
    // A file-size limit (RLIMIT_FSIZE) answers a write beyond it with
    // SIGXFSZ (25 on Linux), whose default kills: handled, the write fails
    // with EFBIG and the journal refuses that one job as on a full disk.
    let _xfsz = signal(SignalKind::from_raw(25)).map_err(DaemonError::Runtime)?;
    // The binary has pointed filecoin-proofs at `proving.params_dir` (see
    // `run`), so verify_seal and the key manager read the same directory.
    let params = ParamsDir::filecoin();
    tracing::info!(params = %params.path().display(), "parameter cache");

    let devices = select_devices(&config.proving)?;
    let facts = crate::defaults::BoxFacts::here();
    let memory = facts.memory;
    let chosen = crate::defaults::choose(facts);
    tracing::info!(
        memory,
        from = crate::resources::memory_source(),
        cores = facts.cores,
        "this box"
    );
    let auto = |set: usize, default: usize| if set == 0 { default } else { set };
    let mut engine_config = EngineConfig::default();
    engine_config.synthesis_workers =
        auto(config.proving.synthesis_workers, chosen.synthesis_workers);
    engine_config.devices = devices.iter().map(|(d, _)| d.clone()).collect();
    // Chosen, it leaves one partition proving beside the synthesis workers.
    engine_config.max_in_flight = auto(
        config.proving.partitions_in_flight,
        chosen
            .partitions_in_flight
            .max(auto(config.proving.synthesis_workers, chosen.synthesis_workers) + 1),
    );
    engine_config.critical_reserve = config.proving.critical_reserve;
    engine_config.reserve_class = config.reserve_class()?;
    engine_config.verify = true;
    // Left to the box, the partitions in flight leave room for a GPU's
    // batch of a streamed key's partitions to form.
    if config.proving.partitions_in_flight == 0 {
        engine_config = engine_config.with_batch_room();
    }
    // Keys and partitions share one host budget (3/4 of RAM by default): each
    // HOT key's bytes are lent out of the engine's budget while it is HOT, so
    // partitions get exactly what the keys do not hold right now (a 44 GiB
    // 32 GiB-PoRep key on a 128 GiB box leaves 52 GiB). srs.host_budget caps
    // the keys alone (3/8 of RAM by default), so partitions always keep at
    // least the rest.
    let total_budget = match config.proving.engine_memory_budget {
        0 => chosen.engine_memory_budget,
        b => b,
    };
    // The native PoSt witnesses' aux pool is carved out of it: what it
    // keeps between partitions is outside every partition's reservation.
    let pool_bytes = config.post_aux_pool()?.unwrap_or(chosen.post_aux_pool);
    if pool_bytes >= total_budget / 2 {
        return Err(DaemonError::Config(ConfigError::Invalid {
            key: "proving.post_aux_pool",
            problem: format!(
                "{pool_bytes} bytes is half or more of the engine's {total_budget}-byte budget (proving.engine_memory_budget): lower it or set it \"off\""
            ),
        }));
    }
    engine_config.memory_budget = total_budget - pool_bytes;
    let post_aux_pool = Arc::new(cuzk_filecoin::AuxPool::new(pool_bytes));
    tracing::info!(
        bytes = pool_bytes,
        "native PoSt witnesses' aux pool (proving.post_aux_pool, out of the engine's budget)"
    );
    prefill_post_aux_pool(&post_aux_pool, &params);
    let srs_budget = match config.srs.host_budget {
        0 => chosen.host_budget,
        b => b,
    };
    tracing::info!(
        synthesis_workers = engine_config.synthesis_workers,
        partitions_in_flight = engine_config.max_in_flight,
        "engine"
    );
    tracing::info!(
        shared = engine_config.memory_budget,
        keys_at_most = srs_budget,
        "host-memory budget of keys and partitions (bytes)"
    );
    let provers = Provers::of(&engine_config);
    let (budget, reserve) = (engine_config.memory_budget, engine_config.host_reserve());
    let engine = Engine::start(engine_config)?;
    // A GPU's recording pinned for streaming (~6 GB for the 32 GiB PoRep
    // circuit) is host memory beside the keys and partitions: counted here.
    cuzk_gpu::count_pinned_matrices_in(Arc::new(engine.host_lender()));
    let share = EngineShare {
        lender: engine.host_lender(),
        budget,
        reserve,
        provers,
    };
    let srs = SrsManager::new(
        params.clone(),
        srs_budget,
        Some(share),
        Duration::from_secs(config.srs.idle_secs),
        Duration::from_secs(config.srs.warm_secs),
    );
    srs.use_synthesis(config.synthesis()?);
    srs.use_device_keys(
        devices
            .iter()
            .filter_map(|(_, v)| {
                Some(DeviceKeys {
                    device: v.name.clone(),
                    slot: v.gpu.as_ref()?.keys.clone(),
                })
            })
            .collect(),
    );
    check_keys_fit(&srs, &config.srs.preload)?;
    let perms = crate::journal::Permissions {
        file_mode: config.state_file_mode()?,
        group: config.state_group()?,
    };
    let (journal, replay) = Journal::open_with(&config.state.dir, perms)?;
    if !replay.damage.is_empty() {
        tracing::warn!(dir = %config.state.dir.display(), records = replay.damage.len(),
            "the journal was damaged; every intact job is kept (each drop is logged above)");
    }
    tracing::info!(dir = %config.state.dir.display(), jobs = replay.jobs.len(),
        "journal read; its unfinished jobs are checked again in the background");
    let request_memory = match config.limits.request_memory {
        0 => chosen.request_memory,
        b => b,
    };
    let settings = Settings {
        max_queued_jobs: config.limits.max_queued_jobs,
        max_queued_bytes: config.limits.max_queued_bytes,
        urgent_reserved_jobs: config.limits.urgent_reserved_jobs,
        urgent_reserved_bytes: config.limits.urgent_reserved_bytes,
        request_memory,
        bulk_jobs_in_engine: config.proving.bulk_jobs_in_engine,
        max_results: config.retention.max_results,
        delivered_retention: Duration::from_secs(config.retention.delivered_secs),
        local_files: crate::aggregate::LocalFiles::new(config.limits.vanilla_file_dirs.clone()),
        post_aux_pool,
    };
    let daemon = Daemon::start(
        settings,
        params,
        engine,
        devices.into_iter().map(|(_, v)| v).collect(),
        srs,
        journal,
        replay.jobs,
    );

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let max = config.listen.max_message_bytes as usize;
    let mode = config.socket_mode()?;
    let group = config.socket_group()?;
    let places = Arc::new(tokio::sync::Semaphore::new(config.limits.max_connections));
    let streams = config.limits.max_streams_per_connection;
    let mut servers = Vec::new();
    let mut sockets = Vec::new();
    for address in config.listen_addresses()? {
        let service = ProvingEngineServer::new(Service::new(Arc::clone(&daemon)))
            .max_decoding_message_size(max)
            .max_encoding_message_size(max);
        let local = CuzkProvingEngineServer::new(Service::new(Arc::clone(&daemon)))
            .max_decoding_message_size(max)
            .max_encoding_message_size(max);
        let mut stop = stop_rx.clone();
        let shutdown = async move {
            let _ = stop.wait_for(|s| *s).await;
        };
        let bind_error = |source| DaemonError::Bind {
            address: address.to_string(),
            source,
        };
        let router = tonic::transport::Server::builder()
            .concurrency_limit_per_connection(streams)
            .max_concurrent_streams(Some(streams as u32))
            .layer(tower::util::MapResponseLayer::new(
                oversized_is_resource_exhausted,
            ))
            .add_service(service)
            .add_service(local);
        let shown = address.to_string();
        let task = match &address {
            ListenAddr::Unix(path) => {
                let listener = bind_unix(path, mode, group).map_err(bind_error)?;
                sockets.push(path.clone());
                tracing::info!(address = %shown, mode = format!("{mode:o}"), "listening");
                tokio::spawn(router.serve_with_incoming_shutdown(
                    crate::listen::limited(listener, Arc::clone(&places)),
                    shutdown,
                ))
            }
            ListenAddr::Tcp(addr) => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(bind_error)?;
                if address.is_local() {
                    tracing::info!(address = %shown, "listening");
                } else {
                    tracing::warn!(address = %shown,
                        "listening on a non-loopback address, as configured: anyone who can reach it can submit proofs (plaintext gRPC, no authentication)");
                }
                tokio::spawn(router.serve_with_incoming_shutdown(
                    crate::listen::limited(listener, Arc::clone(&places)),
                    shutdown,
                ))
            }
        };
        servers.push((shown, task));
    }
    let mut status_task = None;
    if !config.listen.status_address.is_empty() {
        let addr: std::net::SocketAddr =
            config
                .listen
                .status_address
                .parse()
                .map_err(|e| ConfigError::Invalid {
                    key: "listen.status_address",
                    problem: format!("{e}"),
                })?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| DaemonError::Bind {
                address: addr.to_string(),
                source,
            })?;
        tracing::info!(address = %addr, "status server: GET /metrics, GET /status");
        status_task = Some(tokio::spawn(crate::metrics::serve_status(
            listener,
            Arc::clone(&daemon),
            stop_rx.clone(),
        )));
    }
    for id in config.srs.preload.clone() {
        let srs = Arc::clone(daemon.srs());
        std::thread::Builder::new()
            .name(format!("preload-{id}"))
            .spawn(move || match srs.preload(&id) {
                Ok((_, took)) => {
                    tracing::info!(circuit_id = %id, ms = took.as_millis() as u64, "preloaded (srs.preload)")
                }
                Err(e) => tracing::error!(circuit_id = %id, error = %cuzk_pipeline::ErrorChain(&e), "srs.preload failed"),
            })
            .map_err(DaemonError::Runtime)?;
    }
    tracing::info!("cuzk daemon ready");

    let mut term = signal(SignalKind::terminate()).map_err(DaemonError::Runtime)?;

    let mut int = signal(SignalKind::interrupt()).map_err(DaemonError::Runtime)?;
    let which = tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    };
    let grace = Duration::from_secs(config.shutdown.grace_secs);
    tracing::info!(signal = which, grace_s = grace.as_secs(), "stopping");
    let d = Arc::clone(&daemon);
    let _ = tokio::task::spawn_blocking(move || d.drain(grace)).await;
    let _ = stop_tx.send(true);
    for (address, task) in servers {
        match tokio::time::timeout(Duration::from_secs(10), task).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(source))) => return Err(DaemonError::Serve { address, source }),
            Ok(Err(e)) => tracing::error!(address = %address, error = %e, "server task"),
            Err(_) => {
                tracing::warn!(address = %address, "connections still open after 10 s; closing")
            }
        }
    }
    if let Some(t) = status_task {
        let _ = t.await;
    }
    for path in sockets {
        let _ = std::fs::remove_file(path);
    }
    tracing::info!("stopped");
    Ok(())
}

//! The gRPC service: `cuzk.v1.ProvingEngine`'s eight methods over the
//! [`Daemon`]. Blocking work (checking a C1, the journal's fsync) runs on
//! tokio's blocking pool; a client that disconnects mid-`Prove` drops only
//! its own wait, never the job.

use std::sync::Arc;
use std::time::Duration;

use tonic::{Request, Response, Status};

use crate::daemon::{check_envelope, Daemon};
use crate::error::RequestError;
use crate::metrics;
use crate::proto::proving_engine_server::ProvingEngine;
use crate::proto::*;

/// The service (clone per listener).
#[derive(Debug, Clone)]
pub struct Service {
    daemon: Arc<Daemon>,
}

impl Service {
    /// The service over `daemon`.
    pub fn new(daemon: Arc<Daemon>) -> Self {
        Service { daemon }
    }

    async fn submit(&self, req: SubmitProofRequest) -> Result<SubmitProofResponse, RequestError> {
        let result = match check_envelope(&req) {
            Ok(priority) => {
                let d = Arc::clone(&self.daemon);
                tokio::task::spawn_blocking(move || d.submit(req, priority))
                    .await
                    .unwrap_or_else(|e| {
                        Err(RequestError::Internal(format!(
                            "checking the request panicked: {e}"
                        )))
                    })
            }
            Err(e) => Err(e),
        };
        if let Err(e) = &result {
            tracing::info!(error = %e, "submission refused");
            self.daemon.count_rejection(e);
        }
        result
    }
}

#[tonic::async_trait]
impl ProvingEngine for Service {
    async fn submit_proof(
        &self,
        request: Request<SubmitProofRequest>,
    ) -> Result<Response<SubmitProofResponse>, Status> {
        Ok(Response::new(self.submit(request.into_inner()).await?))
    }

    async fn await_proof(
        &self,
        request: Request<AwaitProofRequest>,
    ) -> Result<Response<AwaitProofResponse>, Status> {
        let r = request.into_inner();
        let timeout = (r.timeout_ms > 0).then(|| Duration::from_millis(r.timeout_ms));
        Ok(Response::new(
            self.daemon.await_job(&r.job_id, timeout).await?,
        ))
    }

    async fn prove(
        &self,
        request: Request<ProveRequest>,
    ) -> Result<Response<ProveResponse>, Status> {
        let submit = request.into_inner().submit.ok_or_else(|| {
            Status::invalid_argument(
                "ProveRequest.submit is missing: it carries the SubmitProofRequest",
            )
        })?;
        let accepted = self.submit(submit).await?;
        let result = self.daemon.await_job(&accepted.job_id, None).await?;
        Ok(Response::new(ProveResponse {
            result: Some(result),
        }))
    }

    async fn cancel_proof(
        &self,
        request: Request<CancelProofRequest>,
    ) -> Result<Response<CancelProofResponse>, Status> {
        let was_running = self.daemon.cancel(&request.into_inner().job_id)?;
        Ok(Response::new(CancelProofResponse { was_running }))
    }

    async fn get_status(
        &self,
        _request: Request<GetStatusRequest>,
    ) -> Result<Response<GetStatusResponse>, Status> {
        Ok(Response::new(metrics::status(&self.daemon)))
    }

    async fn get_metrics(
        &self,
        _request: Request<GetMetricsRequest>,
    ) -> Result<Response<GetMetricsResponse>, Status> {
        Ok(Response::new(GetMetricsResponse {
            prometheus_text: metrics::prometheus_text(&self.daemon),
        }))
    }

    async fn preload_srs(
        &self,
        request: Request<PreloadSrsRequest>,
    ) -> Result<Response<PreloadSrsResponse>, Status> {
        let id = request.into_inner().circuit_id;
        let srs = Arc::clone(self.daemon.srs());
        let (already_loaded, took) = tokio::task::spawn_blocking(move || srs.preload(&id))
            .await
            .map_err(|e| Status::internal(format!("loading the key panicked: {e}")))?
            .map_err(srs_status)?;
        Ok(Response::new(PreloadSrsResponse {
            already_loaded,
            load_time_ms: took.as_millis() as u64,
        }))
    }

    async fn evict_srs(
        &self,
        request: Request<EvictSrsRequest>,
    ) -> Result<Response<EvictSrsResponse>, Status> {
        let (was_loaded, freed_bytes) = self
            .daemon
            .srs()
            .evict(&request.into_inner().circuit_id)
            .map_err(srs_status)?;
        Ok(Response::new(EvictSrsResponse {
            was_loaded,
            freed_bytes,
        }))
    }
}

fn srs_status(e: crate::error::SrsError) -> Status {
    use crate::error::SrsError;
    // Every cause, once each: the key file's I/O or format error is the useful part.
    let message = cuzk_pipeline::ErrorChain(&e).to_string();
    match e {
        SrsError::UnknownCircuit { .. } => Status::invalid_argument(message),
        SrsError::Key { .. } | SrsError::LoadFailed { .. } | SrsError::InUse { .. } => {
            Status::failed_precondition(message)
        }
        SrsError::TooLarge { .. } | SrsError::NeverFits { .. } => {
            Status::resource_exhausted(message)
        }
    }
}

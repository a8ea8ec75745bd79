//! A client of the `cuzk.v1.ProvingEngine` service, for operators and
//! benchmarks: `cuzk client prove` sends a C1 the way Curio does (and
//! `winning-post` / `window-post` a PoSt), `preload` makes a key HOT, `evict` drops it; each prints
//! the daemon's timings beside the client's own wall time (their difference
//! is what gRPC costs); `cuzk client status` prints `GetStatus`.
//!
//! The tests drive the daemon with Python's grpcio instead (a client that is
//! not ours); this one exists because the GPU machine has no Python packages.

use std::time::Duration;

use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint};

use crate::listen::ListenAddr;
use crate::proto::cuzk_proving_engine_client::CuzkProvingEngineClient;
use crate::proto::proving_engine_client::ProvingEngineClient;
use crate::proto::{
    AwaitProofRequest, AwaitProofResponse, EvictSrsRequest, GetStatusRequest, GetStatusResponse,
    PreloadSrsRequest, ProveRequest, SubmitAggregateRequest, SubmitProofFileRequest,
    SubmitProofRequest, SubmitProofResponse,
};

/// What can go wrong talking to a daemon.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The address is neither `unix:PATH` nor `HOST:PORT`.
    #[error(transparent)]
    Address(#[from] crate::error::ConfigError),
    /// No daemon answered at the address.
    #[error("cannot reach the daemon at {address}")]
    Connect {
        /// The address as given.
        address: String,
        /// Why.
        #[source]
        source: tonic::transport::Error,
    },
    /// The daemon answered the call with an error status.
    #[error("{method}: {}: {}", .status.code(), .status.message())]
    Call {
        /// The method called.
        method: &'static str,
        /// The status returned.
        status: tonic::Status,
    },
}

/// A connection to one daemon.
#[derive(Debug, Clone)]
pub struct Client {
    inner: ProvingEngineClient<Channel>,
    /// cuzk's own RPCs on the same connection.
    local: CuzkProvingEngineClient<Channel>,
}

impl Client {
    /// Connects to `unix:PATH` or `HOST:PORT` (the forms `--listen` takes).
    pub async fn connect(address: &str) -> Result<Client, ClientError> {
        let failed = |source| ClientError::Connect {
            address: address.into(),
            source,
        };
        let channel = match ListenAddr::parse(address)? {
            ListenAddr::Tcp(a) => Endpoint::from_shared(format!("http://{a}"))
                .map_err(failed)?
                .connect()
                .await
                .map_err(failed)?,
            ListenAddr::Unix(path) => {
                // tonic wants a URI; this connector never reads it and dials the socket.
                Endpoint::from_static("http://localhost")
                    .connect_with_connector(tower::service_fn(move |_| {
                        let path = path.clone();
                        async move {
                            let stream = tokio::net::UnixStream::connect(path).await?;
                            Ok::<_, std::io::Error>(TokioIo::new(stream))
                        }
                    }))
                    .await
                    .map_err(failed)?
            }
        };
        let local = CuzkProvingEngineClient::new(channel.clone())
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(usize::MAX);
        let inner = ProvingEngineClient::new(channel)
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(usize::MAX);
        Ok(Client { inner, local })
    }

    /// `Prove`: submits and waits for the job's end (its status says how it ended).
    pub async fn prove(
        &mut self,
        submit: SubmitProofRequest,
        deadline: Option<Duration>,
    ) -> Result<AwaitProofResponse, ClientError> {
        let mut request = tonic::Request::new(ProveRequest {
            submit: Some(submit),
        });
        if let Some(d) = deadline {
            request.set_timeout(d);
        }
        let response = self
            .inner
            .prove(request)
            .await
            .map_err(|status| ClientError::Call {
                method: "Prove",
                status,
            })?;
        Ok(response.into_inner().result.unwrap_or_default())
    }

    /// `PreloadSRS`: (it was HOT already, the daemon's load time in ms).
    pub async fn preload(&mut self, circuit_id: &str) -> Result<(bool, u64), ClientError> {
        self.inner
            .preload_srs(PreloadSrsRequest {
                circuit_id: circuit_id.into(),
            })
            .await
            .map(|r| {
                let r = r.into_inner();
                (r.already_loaded, r.load_time_ms)
            })
            .map_err(|status| ClientError::Call {
                method: "PreloadSRS",
                status,
            })
    }

    /// `EvictSRS`: (it was HOT, host bytes freed).
    pub async fn evict(&mut self, circuit_id: &str) -> Result<(bool, u64), ClientError> {
        self.inner
            .evict_srs(EvictSrsRequest {
                circuit_id: circuit_id.into(),
            })
            .await
            .map(|r| {
                let r = r.into_inner();
                (r.was_loaded, r.freed_bytes)
            })
            .map_err(|status| ClientError::Call {
                method: "EvictSRS",
                status,
            })
    }

    /// `SubmitProof`: the job id and its place in the queue.
    pub async fn submit(
        &mut self,
        submit: SubmitProofRequest,
    ) -> Result<SubmitProofResponse, ClientError> {
        self.inner
            .submit_proof(submit)
            .await
            .map(tonic::Response::into_inner)
            .map_err(|status| ClientError::Call {
                method: "SubmitProof",
                status,
            })
    }

    /// cuzk's `SubmitProofFile`: `submit` with its vanilla proof read by the
    /// daemon from `path` on its machine (under its `limits.vanilla_file_dirs`).
    pub async fn submit_file(
        &mut self,
        submit: SubmitProofRequest,
        path: &str,
    ) -> Result<SubmitProofResponse, ClientError> {
        self.local
            .submit_proof_file(SubmitProofFileRequest {
                submit: Some(submit),
                vanilla_proof_path: path.into(),
            })
            .await
            .map(tonic::Response::into_inner)
            .map_err(|status| ClientError::Call {
                method: "SubmitProofFile",
                status,
            })
    }

    /// cuzk's `SubmitAggregate`: an aggregation job.
    pub async fn submit_aggregate(
        &mut self,
        request: SubmitAggregateRequest,
    ) -> Result<SubmitProofResponse, ClientError> {
        self.local
            .submit_aggregate(request)
            .await
            .map(tonic::Response::into_inner)
            .map_err(|status| ClientError::Call {
                method: "SubmitAggregate",
                status,
            })
    }

    /// `AwaitProof` (`timeout_ms` 0: until the job ends).
    pub async fn await_proof(
        &mut self,
        job_id: &str,
        timeout_ms: u64,
    ) -> Result<AwaitProofResponse, ClientError> {
        self.inner
            .await_proof(AwaitProofRequest {
                job_id: job_id.into(),
                timeout_ms,
            })
            .await
            .map(tonic::Response::into_inner)
            .map_err(|status| ClientError::Call {
                method: "AwaitProof",
                status,
            })
    }

    /// `GetStatus`.
    pub async fn status(&mut self) -> Result<GetStatusResponse, ClientError> {
        self.inner
            .get_status(GetStatusRequest {})
            .await
            .map(tonic::Response::into_inner)
            .map_err(|status| ClientError::Call {
                method: "GetStatus",
                status,
            })
    }
}
/// The request id Curio gives a PoSt: `winpost-<miner>-<hex of the first
/// 8 randomness bytes>`, or `wdpost-<miner>-<partition>-<the same>`.
pub fn post_request_id(winning: bool, miner: u64, partition: u32, randomness: &[u8]) -> String {
    let head = hex::encode(&randomness[..randomness.len().min(8)]);
    if winning {
        format!("winpost-{miner}-{head}")
    } else {
        format!("wdpost-{miner}-{partition}-{head}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn post_request_ids_are_curios() {
        let r: Vec<u8> = (0..32).collect();
        assert_eq!(
            super::post_request_id(true, 1000, 0, &r),
            "winpost-1000-0001020304050607"
        );
        assert_eq!(
            super::post_request_id(false, 7, 3, &r),
            "wdpost-7-3-0001020304050607"
        );
    }
}

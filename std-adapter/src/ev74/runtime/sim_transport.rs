//! [`SimTransport`]: a [`Transport`] that runs `simak-ev74-fw` on a simulated device in its
//! own thread, in submission order.

use std::fmt;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use simak_ev74_fw::{Capabilities, Capability, Command};

use super::{Retire, Transport, TransportError, lock};
use crate::ev74::sim::{SimDevice, dispatch};

/// Configuration of a [`SimTransport`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimConfig {
    /// Worker ring size, 1 to 4; outside that range every command fails with
    /// `FwError::Workers` (as `run_sim`).
    pub workers: usize,
    /// Entries the simulated firmware advertises.
    pub advertised: Capabilities,
    /// Use the flushing FP-unit model.
    pub flush_to_zero: bool,
}

impl SimConfig {
    /// `workers` workers, every entry advertised, IEEE unit.
    pub const fn new(workers: usize) -> SimConfig {
        SimConfig {
            workers,
            advertised: Capabilities::all(),
            flush_to_zero: false,
        }
    }
}

struct Job {
    command: Command,
    retire: Retire,
}

#[derive(Default)]
struct Queue {
    pending: usize,
    abort: bool,
}

struct SimShared {
    device: Mutex<SimDevice>,
    config: SimConfig,
    queue: Mutex<Queue>,
    idle: Condvar,
}

/// A [`Transport`] that runs `simak-ev74-fw` on a simulated device in its own thread.
/// Commands execute in submission order; completion is signalled after the firmware
/// returned and device memory is coherent for the host.
pub struct SimTransport {
    shared: Arc<SimShared>,
    sender: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl fmt::Debug for SimTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimTransport")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl SimTransport {
    /// Starts the device thread (named `ev74-sim`). If the thread cannot be started, every
    /// submission fails with [`TransportError::Closed`].
    pub fn new(config: SimConfig) -> SimTransport {
        let shared = Arc::new(SimShared {
            device: Mutex::new(SimDevice::new(config.workers)),
            config,
            queue: Mutex::new(Queue::default()),
            idle: Condvar::new(),
        });
        let (sender, receiver) = mpsc::channel::<Job>();
        let device_side = shared.clone();
        let thread = std::thread::Builder::new()
            .name("ev74-sim".into())
            .spawn(move || device_loop(&device_side, &receiver))
            .ok();
        SimTransport {
            shared,
            sender: Mutex::new(Some(sender)),
            thread: Mutex::new(thread),
        }
    }

    /// Runs `f` on the simulated device (memory inspection in tests); blocks while a command
    /// executes.
    pub fn with_device<R>(&self, f: impl FnOnce(&mut SimDevice) -> R) -> R {
        f(&mut lock(&self.shared.device))
    }
}

fn device_loop(shared: &SimShared, receiver: &mpsc::Receiver<Job>) {
    while let Ok(job) = receiver.recv() {
        let aborted = lock(&shared.queue).abort;
        if !aborted {
            let config = &shared.config;
            let status = dispatch(
                &mut lock(&shared.device),
                config.workers,
                config.advertised,
                config.flush_to_zero,
                &job.command,
            );
            // Releasing the device lock (above) published every write to the host
            // (coherency) before completion is confirmed.
            job.retire.complete(status);
        }
        let mut q = lock(&shared.queue);
        q.pending = q.pending.saturating_sub(1);
        if q.pending == 0 {
            q.abort = false;
        }
        shared.idle.notify_all();
    }
}

impl Transport for SimTransport {
    fn capabilities(&self) -> Result<Vec<Capability>, TransportError> {
        Ok(
            simak_ev74_fw::capability::advertised(self.shared.config.advertised)
                .copied()
                .collect(),
        )
    }

    fn allocate(&self, len: u64) -> Result<u32, TransportError> {
        Ok(lock(&self.shared.device).memory.allocate(len)?)
    }

    fn free(&self, address: u32) {
        let _ = lock(&self.shared.device).memory.free(address);
    }

    fn read(&self, address: u32, out: &mut [u8]) -> Result<(), TransportError> {
        Ok(lock(&self.shared.device).memory.host_read(address, out)?)
    }

    fn write(&self, address: u32, data: &[u8]) -> Result<(), TransportError> {
        Ok(lock(&self.shared.device).memory.host_write(address, data)?)
    }

    fn submit(&self, command: Command, retire: Retire) -> Result<(), TransportError> {
        let sender = lock(&self.sender);
        let sender = sender.as_ref().ok_or(TransportError::Closed)?;
        lock(&self.shared.queue).pending += 1;
        if sender.send(Job { command, retire }).is_err() {
            let mut q = lock(&self.shared.queue);
            q.pending = q.pending.saturating_sub(1);
            return Err(TransportError::Closed);
        }
        Ok(())
    }

    fn abort(&self) {
        let mut q = lock(&self.shared.queue);
        if q.pending > 0 {
            q.abort = true;
        }
    }

    fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut q = lock(&self.shared.queue);
        while q.pending > 0 {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            q = self
                .shared
                .idle
                .wait_timeout(q, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }
}

impl Drop for SimTransport {
    fn drop(&mut self) {
        lock(&self.sender).take();
        if let Some(t) = lock(&self.thread).take() {
            // The last reference can go on the device thread itself: a completion callback
            // that releases the last buffers of a dropped executor drops the transport
            // there. That thread cannot join itself; with the sender gone its loop ends once
            // the callback returns.
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

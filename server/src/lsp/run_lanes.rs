//! Where and when the editor's runs execute: the foreground, background and slow lanes with
//! their thread pools ([`RunSlots`]), and one run in flight per script, superseded runs
//! cancelled ([`Scheduler`], on [`Lanes`], which the analyses of files use too). What a run
//! does is `runs.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::project::ScriptId;
#[cfg(doc)]
use super::runs::QUICK_PASS;

/// How many runs execute at once, in two lanes: background runs (scripts nobody has open, e.g.
/// the first run of a whole workspace) may take all slots but one, so a run the user waits for
/// starts at once even behind thousands of queued runs or scripts running into their timeout.
/// Bounded slots also bound the threads: each run blocks one thread and spreads its steps over
/// rayon's pool.
/// Each lane spreads its runs' steps over its own rayon pool, so a foreground step never waits
/// in a queue behind background steps that run into their timeout.
/// A third lane, one run at a time outside those slots, takes background runs again whose
/// quick first pass ran into [`QUICK_PASS`]: runs that loop then never hold the background
/// lane for their whole timeout.
/// A background run starts only while no foreground run is under way: on 2 cores the runs of a
/// cold start's whole workspace otherwise halved the speed of the one run the user waits for
/// (the first lens of the file they opened).
pub struct RunSlots {
    all: Arc<tokio::sync::Semaphore>,
    background: Arc<tokio::sync::Semaphore>,
    /// How many foreground runs hold a slot now.
    foreground_runs: Arc<tokio::sync::watch::Sender<usize>>,
    slow: Arc<tokio::sync::Semaphore>,
    foreground_pool: Arc<rayon::ThreadPool>,
    background_pool: Arc<rayon::ThreadPool>,
    slow_pool: Arc<rayon::ThreadPool>,
}

/// A slot held for one run.
pub struct Slot {
    _background: Option<tokio::sync::OwnedSemaphorePermit>,
    _run: Option<tokio::sync::OwnedSemaphorePermit>,
    _foreground: Option<ForegroundRun>,
    pool: Arc<rayon::ThreadPool>,
}

/// Counts a foreground run in [`RunSlots`] while it lives.
struct ForegroundRun(Arc<tokio::sync::watch::Sender<usize>>);

impl ForegroundRun {
    fn new(count: &Arc<tokio::sync::watch::Sender<usize>>) -> ForegroundRun {
        count.send_modify(|n| *n += 1);
        ForegroundRun(count.clone())
    }
}

impl Drop for ForegroundRun {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl Slot {
    /// The pool the run's steps go to (`pool.install(|| execute(..))`).
    pub fn pool(&self) -> Arc<rayon::ThreadPool> {
        self.pool.clone()
    }
}

fn pool(threads: usize, name: &'static str) -> Arc<rayon::ThreadPool> {
    let built = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("kruise-lua-{name}-{i}"))
        .stack_size(crate::project::WORKER_STACK)
        .build();
    // Only fails when threads cannot be spawned at all; one thread then runs everything.
    Arc::new(built.unwrap_or_else(|_| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .stack_size(crate::project::WORKER_STACK)
            .build()
            .expect("a one-thread pool")
    }))
}

impl RunSlots {
    pub fn new(slots: usize) -> RunSlots {
        let slots = slots.max(2);
        RunSlots {
            all: Arc::new(tokio::sync::Semaphore::new(slots)),
            background: Arc::new(tokio::sync::Semaphore::new(slots - 1)),
            foreground_runs: Arc::new(tokio::sync::watch::channel(0).0),
            slow: Arc::new(tokio::sync::Semaphore::new(1)),
            foreground_pool: pool(slots, "run"),
            background_pool: pool(slots - 1, "background"),
            slow_pool: pool(1, "slow"),
        }
    }

    /// Waits for the slow lane (see [`RunSlots`]).
    pub async fn acquire_slow(&self) -> Slot {
        Slot {
            pool: self.slow_pool.clone(),
            _background: None,
            _run: self.slow.clone().acquire_owned().await.ok(),
            _foreground: None,
        }
    }

    /// Waits for a slot (the semaphores are fair: first come, first served within a lane).
    pub async fn acquire(&self, foreground: bool) -> Slot {
        let background = if foreground {
            None
        } else {
            let permit = self.background.clone().acquire_owned().await.ok();
            let mut foreground_runs = self.foreground_runs.subscribe();
            let _ = foreground_runs.wait_for(|n| *n == 0).await;
            permit
        };
        Slot {
            _foreground: foreground.then(|| ForegroundRun::new(&self.foreground_runs)),
            pool: if foreground {
                self.foreground_pool.clone()
            } else {
                self.background_pool.clone()
            },
            _background: background,
            _run: self.all.clone().acquire_owned().await.ok(),
        }
    }
}

impl Default for RunSlots {
    fn default() -> Self {
        RunSlots::new(std::thread::available_parallelism().map_or(2, |n| n.get()))
    }
}

/// Debouncing and cancellation state of runs: a generation per script (a newer request
/// supersedes older ones), a lock per script (one run in flight), and the newest generation
/// whose run has ended (so `runAll` can wait for the run that is current, not one a later
/// request superseded).
#[derive(Default)]
pub struct Scheduler {
    lanes: Lanes<ScriptId>,
    last_request: Mutex<HashMap<ScriptId, std::time::Instant>>,
    ended: Mutex<HashMap<ScriptId, Arc<tokio::sync::watch::Sender<u64>>>>,
}

/// Work per key where a newer request supersedes the older ones and one piece of work holds
/// the key's lock at a time: the editor's runs per script ([`Scheduler`]) and its analyses per
/// file (`Session::analyse`).
pub struct Lanes<K> {
    generations: Mutex<HashMap<K, Arc<AtomicU64>>>,
    locks: Mutex<HashMap<K, Arc<tokio::sync::Mutex<()>>>>,
}

impl<K> Default for Lanes<K> {
    fn default() -> Self {
        Lanes {
            generations: Mutex::default(),
            locks: Mutex::default(),
        }
    }
}

/// One request of a [`Lanes`] key.
pub struct LaneTicket {
    generation: Arc<AtomicU64>,
    mine: u64,
    lock: Arc<tokio::sync::Mutex<()>>,
}

impl LaneTicket {
    /// Whether a newer request came after this one.
    pub fn superseded(&self) -> bool {
        self.generation.load(Ordering::SeqCst) != self.mine
    }

    /// The key's lock, which the work holds while it runs.
    pub fn lock(&self) -> Arc<tokio::sync::Mutex<()>> {
        self.lock.clone()
    }

    /// [`LaneTicket::superseded`], usable from a blocking thread.
    pub fn canceller(&self) -> impl Fn() -> bool + Send + Sync + 'static {
        let generation = self.generation.clone();
        let mine = self.mine;
        move || generation.load(Ordering::SeqCst) != mine
    }
}

impl<K: std::hash::Hash + Eq + Clone> Lanes<K> {
    /// Registers a new request for `key`, superseding any earlier one.
    pub fn request(&self, key: &K) -> LaneTicket {
        let generation = lock(&self.generations)
            .entry(key.clone())
            .or_default()
            .clone();
        let mine = generation.fetch_add(1, Ordering::SeqCst) + 1;
        LaneTicket {
            generation,
            mine,
            lock: lock(&self.locks).entry(key.clone()).or_default().clone(),
        }
    }

    /// The counter of `key`'s requests, when it had any.
    fn requested(&self, key: &K) -> Option<Arc<AtomicU64>> {
        lock(&self.generations).get(key).cloned()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A ticket for one requested run. Dropping the ticket of the newest request (its run ended,
/// whichever way) marks its generation as ended.
pub struct Ticket {
    lane: LaneTicket,
    ended: Arc<tokio::sync::watch::Sender<u64>>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.superseded() {
            let mine = self.lane.mine;
            self.ended.send_if_modified(|ended| {
                let newer = *ended < mine;
                if newer {
                    *ended = mine;
                }
                newer
            });
        }
    }
}

impl Ticket {
    /// Whether a newer request came after this one.
    pub fn superseded(&self) -> bool {
        self.lane.superseded()
    }

    pub fn lock(&self) -> Arc<tokio::sync::Mutex<()>> {
        self.lane.lock()
    }

    /// A check usable from a blocking thread.
    pub fn canceller(&self) -> impl Fn() -> bool + Send + Sync + 'static {
        self.lane.canceller()
    }
}

impl Scheduler {
    /// The delay before running a new request for `id`: none when the script was quiet for
    /// `debounce` (an isolated edit runs at once), else `debounce` (a burst of edits runs once,
    /// after the last).
    pub fn delay_for(&self, id: &ScriptId, debounce: std::time::Duration) -> std::time::Duration {
        let now = std::time::Instant::now();
        let last = self
            .last_request
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), now);
        match last {
            Some(last) if now.duration_since(last) < debounce => debounce,
            _ => std::time::Duration::ZERO,
        }
    }

    /// The number of runs requested so far for each script: with [`Scheduler::requested_since`],
    /// tells which scripts got a request after this moment.
    pub fn requests_now(&self) -> HashMap<ScriptId, u64> {
        lock(&self.lanes.generations)
            .iter()
            .map(|(id, generation)| (id.clone(), generation.load(Ordering::SeqCst)))
            .collect()
    }

    /// Whether a run of `id` was requested after `before` was taken ([`Scheduler::requests_now`]).
    pub fn requested_since(&self, id: &ScriptId, before: &HashMap<ScriptId, u64>) -> bool {
        let now = self
            .lanes
            .requested(id)
            .map_or(0, |generation| generation.load(Ordering::SeqCst));
        now > before.get(id).copied().unwrap_or(0)
    }

    /// Registers a new request for `id`, superseding any earlier one.
    pub fn request(&self, id: &ScriptId) -> Ticket {
        Ticket {
            lane: self.lanes.request(id),
            ended: self.ended_of(id),
        }
    }

    fn ended_of(&self, id: &ScriptId) -> Arc<tokio::sync::watch::Sender<u64>> {
        self.ended
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(id.clone())
            .or_insert_with(|| Arc::new(tokio::sync::watch::channel(0).0))
            .clone()
    }

    /// Waits until the newest run requested for `id` has ended (a request made meanwhile is
    /// waited for too).
    pub async fn settled(&self, id: &ScriptId) {
        let Some(generation) = self.lanes.requested(id) else {
            return;
        };
        let mut ended = self.ended_of(id).subscribe();
        loop {
            if *ended.borrow_and_update() >= generation.load(Ordering::SeqCst) {
                return;
            }
            if ended.changed().await.is_err() {
                return;
            }
        }
    }
}

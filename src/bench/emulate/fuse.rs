//! The FUSE server: one file, `disk.img`, served from a sparse backing file, every request
//! delayed as the `Model` says.
//!
//! The session thread (fuser's, one) only queues requests; `Model::servers` worker threads
//! take them in the order `Model::pick` chooses, do the I/O on the backing file, sleep until
//! the model's completion time, and reply. Times are kept on one clock (seconds since the
//! server started): a request's service starts at the later of its arrival and its worker's
//! previous completion, so a late wake-up of one sleep is not added to the next one, and
//! throughput is the model's even when `sleep` overshoots (timer slack is set to 1 ns as well).
//!
//! The connection asks the kernel for asynchronous direct I/O (`FUSE_ASYNC_DIO`) and up to
//! 256 background requests: without them the loop driver's direct I/O would reach us one
//! request at a time, and `channels` would mean nothing.
//!
//! Counters ([`IoCounters`]) are kept under the same lock as the queue.

use super::model::{Model, Op, Request};
use crate::bench::IoCounters;
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, WriteFlags,
};
use std::collections::VecDeque;
use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, UNIX_EPOCH};

pub(crate) use super::FILE_NAME;
const FILE_INO: INodeNo = INodeNo(2);
const TTL: Duration = Duration::from_secs(3600);

enum Reply {
    Read(ReplyData),
    Write(ReplyWrite, Vec<u8>),
    Flush(ReplyEmpty),
}

struct Pending {
    req: Request,
    arrival: f64,
    reply: Reply,
}

struct State {
    model: Model,
    pending: VecDeque<Pending>,
    in_service: u64,
    counters: IoCounters,
    /// Set when the server stops: workers serve what is left without delay and exit.
    stop: bool,
}

/// What the session thread and the workers share.
pub(crate) struct Shared {
    state: Mutex<State>,
    cv: Condvar,
    epoch: Instant,
    backing: File,
    size: u64,
    /// Whether the model has a write cache, so that `fsync` must wait for it.
    write_cache: bool,
}

impl Shared {
    /// A new device over `backing` (its current length is the device size).
    pub(crate) fn new(model: Model, backing: File, size: u64) -> Arc<Shared> {
        let write_cache = model.spec().write_cache > 0;
        Arc::new(Shared {
            state: Mutex::new(State {
                model,
                pending: VecDeque::new(),
                in_service: 0,
                counters: IoCounters::default(),
                stop: false,
            }),
            cv: Condvar::new(),
            epoch: Instant::now(),
            backing,
            size,
            write_cache,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn now(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
    }

    /// The counters so far.
    pub(crate) fn counters(&self) -> IoCounters {
        self.lock().counters
    }

    /// Starts a new maximum queue depth (the other counters run on; take differences).
    pub(crate) fn reset_max_depth(&self) {
        let mut st = self.lock();
        st.counters.max_depth = st.pending.len() as u64 + st.in_service;
    }

    /// Makes the workers finish what is queued without delay and exit.
    pub(crate) fn stop(&self) {
        self.lock().stop = true;
        self.cv.notify_all();
    }

    fn enqueue(&self, req: Request, reply: Reply) {
        let arrival = self.now();
        let mut st = self.lock();
        if req.op != Op::Flush {
            let depth = st.pending.len() as u64 + st.in_service + 1;
            st.counters.max_depth = st.counters.max_depth.max(depth);
            st.counters.depth_sum += depth;
        }
        st.pending.push_back(Pending {
            req,
            arrival,
            reply,
        });
        drop(st);
        self.cv.notify_one();
    }

    /// One worker: serve requests until stopped and idle.
    pub(crate) fn work(&self) {
        // SAFETY: prctl(PR_SET_TIMERSLACK) only changes this thread's timer slack.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
        }
        let mut prev_end = 0.0f64;
        loop {
            let mut st = self.lock();
            while st.pending.is_empty() && !st.stop {
                st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            let waiting: Vec<(Request, f64)> = st
                .pending
                .iter()
                .take(st.model.spec().channels as usize)
                .map(|p| (p.req, p.arrival))
                .collect();
            let Some(i) = st.model.pick(&waiting, self.now().max(prev_end)) else {
                return; // stopped and nothing left
            };
            let Some(p) = st.pending.remove(i) else {
                return;
            };
            let start = p.arrival.max(prev_end);
            let served = st.model.serve(start, p.req);
            let fast = st.stop;
            st.in_service += 1;
            let c = &mut st.counters;
            match p.req.op {
                Op::Read => {
                    c.reads += 1;
                    c.read_bytes += p.req.len;
                }
                Op::Write => {
                    c.writes += 1;
                    c.write_bytes += p.req.len;
                }
                Op::Flush => {}
            }
            if served.distance > 0 {
                c.seeks += 1;
                c.seek_bytes += served.distance;
            }
            c.position_us += (served.position_s * 1e6) as u64;
            c.busy_us += ((served.end - start) * 1e6) as u64;
            drop(st);
            prev_end = served.end;
            let done = self.io(p.req, p.reply);
            if !fast {
                let wait = served.end - self.now();
                if wait > 0.0 {
                    std::thread::sleep(Duration::from_secs_f64(wait));
                }
            }
            done();
            self.lock().in_service -= 1;
        }
    }

    /// Does the I/O now and returns the reply to send when the service time is over.
    fn io(&self, req: Request, reply: Reply) -> Box<dyn FnOnce()> {
        match reply {
            Reply::Read(r) => {
                let len = req.len.min(self.size.saturating_sub(req.offset)) as usize;
                let mut buf = vec![0u8; len];
                match read_full(&self.backing, &mut buf, req.offset) {
                    Ok(n) => {
                        buf.truncate(n);
                        Box::new(move || r.data(&buf))
                    }
                    Err(e) => Box::new(move || r.error(errno(&e))),
                }
            }
            Reply::Write(r, data) => match self.backing.write_all_at(&data, req.offset) {
                Ok(()) => {
                    let n = data.len() as u32;
                    Box::new(move || r.written(n))
                }
                Err(e) => Box::new(move || r.error(errno(&e))),
            },
            Reply::Flush(r) => Box::new(move || r.ok()),
        }
    }
}

fn read_full(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(&mut buf[n..], offset + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn errno(e: &std::io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

/// The fuser filesystem: a root directory holding [`FILE_NAME`].
pub(crate) struct DiskFs {
    pub(crate) shared: Arc<Shared>,
}

impl DiskFs {
    fn attr(&self, ino: INodeNo) -> Option<FileAttr> {
        let (kind, perm, nlink, size) = match ino {
            INodeNo::ROOT => (FileType::Directory, 0o755, 2, 0),
            FILE_INO => (FileType::RegularFile, 0o600, 1, self.shared.size),
            _ => return None,
        };
        Some(FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind,
            perm,
            nlink,
            uid: 0,
            gid: 0,
            rdev: 0,
            flags: 0,
            blksize: 4096,
        })
    }
}

impl Filesystem for DiskFs {
    fn init(&mut self, _req: &fuser::Request, config: &mut KernelConfig) -> std::io::Result<()> {
        if let Err(missing) = config.add_capabilities(InitFlags::FUSE_ASYNC_DIO) {
            tracing::warn!("emulate: the kernel lacks {missing:?}: requests arrive one at a time");
        }
        let _ = config.set_max_background(256);
        let _ = config.set_congestion_threshold(256);
        Ok(())
    }

    fn lookup(&self, _req: &fuser::Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.attr(FILE_INO) {
            Some(a) if parent == INodeNo::ROOT && name == FILE_NAME => {
                reply.entry(&TTL, &a, Generation(0));
            }
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(
        &self,
        _req: &fuser::Request,
        ino: INodeNo,
        _fh: Option<FileHandle>,
        reply: ReplyAttr,
    ) {
        match self.attr(ino) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &fuser::Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if ino == FILE_INO {
            // No page cache on our side of the kernel: every request reaches the model.
            reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO);
        } else {
            reply.error(Errno::EISDIR);
        }
    }

    fn read(
        &self,
        _req: &fuser::Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let req = Request {
            op: Op::Read,
            offset,
            len: u64::from(size),
        };
        self.shared.enqueue(req, Reply::Read(reply));
    }

    fn write(
        &self,
        _req: &fuser::Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        if offset.saturating_add(data.len() as u64) > self.shared.size {
            reply.error(Errno::ENOSPC);
            return;
        }
        let req = Request {
            op: Op::Write,
            offset,
            len: data.len() as u64,
        };
        self.shared.enqueue(req, Reply::Write(reply, data.to_vec()));
    }

    fn flush(
        &self,
        _req: &fuser::Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    /// The loop driver's cache flush (`REQ_OP_FLUSH`, and a FUA write's post-flush: loop
    /// does not claim FUA) arrives as `fsync` of the backing file. With a write cache
    /// (`wcache`) it is queued and completes when the model has destaged the cache; without
    /// one it has nothing to do and is answered at once, as before (the backing file's
    /// durability does not matter: it is thrown away).
    fn fsync(
        &self,
        _req: &fuser::Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        if self.shared.write_cache {
            let req = Request {
                op: Op::Flush,
                offset: 0,
                len: 0,
            };
            self.shared.enqueue(req, Reply::Flush(reply));
        } else {
            reply.ok();
        }
    }

    fn readdir(
        &self,
        _req: &fuser::Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if ino != INodeNo::ROOT {
            reply.error(Errno::ENOTDIR);
            return;
        }
        let entries = [
            (INodeNo::ROOT, FileType::Directory, "."),
            (INodeNo::ROOT, FileType::Directory, ".."),
            (FILE_INO, FileType::RegularFile, FILE_NAME),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(*ino, (i + 1) as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }
}

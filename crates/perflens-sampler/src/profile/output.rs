//! A report written out: folded stacks, flamegraphs and pprof profiles.

use super::*;

impl CpuProfile {
    /// Folded lines (`thread;root;...;leaf value`): the native stacks as
    /// they were, value in CPU microseconds (at least 1 per stack with
    /// samples), sorted, one line per distinct stack. The measured path a
    /// sample was taken in is not a frame here (it would split identical
    /// stacks above `_start`): pprof carries it as the `perflens_path`
    /// label, and [`CpuProfile::folded_lines_by_path`] puts it first. Kernel
    /// time not on any stack ([`ThreadProfile::kernel_ns`]) is a
    /// `thread;[kernel]` line of its own.
    pub fn folded_lines(&self) -> Vec<String> {
        self.folded(false)
    }

    /// [`CpuProfile::folded_lines`] with the measured path as a frame of its
    /// own after the thread (`thread;[main -> parse];root;...;leaf`): a
    /// flamegraph split by measured path first.
    pub fn folded_lines_by_path(&self) -> Vec<String> {
        self.folded(true)
    }

    pub(super) fn folded(&self, by_path: bool) -> Vec<String> {
        let kernel = self.kernel_entries();
        // Stacks that differ only in their measured path are one stack
        // when the path is left out: their CPU time is summed first, so
        // that each line keeps at least 1 µs per stack with samples.
        let mut stacks: HashMap<String, u64> = HashMap::new();
        for (f, v) in (self.data.iter()).chain(kernel.iter().map(|(f, v)| (f, v))) {
            if v.samples == 0 && v.cpu_ns == 0 {
                continue;
            }
            let mut parts: Vec<String> = Vec::with_capacity(f.frames.len() + 2);
            if !f.thread_name.is_empty() {
                parts.push(f.thread_name.replace(';', ":"));
            }
            if let (true, Some(p)) = (by_path, &f.context_name) {
                parts.push(format!("[{}]", p.replace(';', ":")));
            }
            for level in f.frames.iter().rev() {
                for s in level.iter().rev() {
                    parts.push(folded_name(s));
                }
            }
            *stacks.entry(parts.join(";")).or_default() += v.cpu_ns;
        }
        let mut lines: Vec<String> = (stacks.into_iter())
            .map(|(stack, ns)| format!("{stack} {}", (ns / 1000).max(1)))
            .collect();
        lines.sort();
        lines
    }

    /// Writes folded stacks (see [`CpuProfile::folded_lines`]).
    pub fn write_folded(&self, mut w: impl Write) -> Result<(), SamplerError> {
        for l in self.folded_lines() {
            writeln!(w, "{l}")?;
        }
        Ok(())
    }

    /// Writes a flamegraph SVG (widths are CPU time).
    pub fn flamegraph(&self, w: impl Write) -> Result<(), SamplerError> {
        let mut opts = inferno::flamegraph::Options::default();
        opts.count_name = "µs CPU".to_string();
        opts.title = "CPU".to_string();
        self.flamegraph_with_options(w, &mut opts)
    }

    /// Writes a flamegraph SVG with inferno options.
    pub fn flamegraph_with_options(
        &self,
        w: impl Write,
        opts: &mut inferno::flamegraph::Options<'_>,
    ) -> Result<(), SamplerError> {
        let lines = self.folded_lines();
        inferno::flamegraph::from_lines(opts, lines.iter().map(String::as_str), w)
            .map_err(SamplerError::Io)
    }

    /// A second flamegraph, split by measured path first (see
    /// [`CpuProfile::folded_lines_by_path`]).
    pub fn flamegraph_by_path(&self, w: impl Write) -> Result<(), SamplerError> {
        let mut opts = inferno::flamegraph::Options::default();
        opts.count_name = "µs CPU".to_string();
        opts.title = "CPU by measured path".to_string();
        let lines = self.folded_lines_by_path();
        inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), w)
            .map_err(SamplerError::Io)
    }

    /// The profile as uncompressed `profile.proto` bytes.
    pub fn pprof_proto(&self) -> Vec<u8> {
        let mut st = Strings::new();
        let mut profile = Msg::default();
        for (ty, unit) in [("samples", "count"), ("cpu", "nanoseconds")] {
            let mut vt = Msg::default();
            vt.int(1, st.id(ty)).int(2, st.id(unit));
            profile.msg(1, &vt);
        }
        let mut locations: HashMap<(u64, &[Symbol]), u64> = HashMap::new();
        let mut location_msgs: Vec<Msg> = Vec::new();
        let mut functions: HashMap<(&str, Option<&str>), u64> = HashMap::new();
        let mut function_msgs: Vec<Msg> = Vec::new();
        let mut used_modules: Vec<usize> = Vec::new();
        let kernel = self.kernel_entries();
        let mut entries: Vec<(&Frames, &SampleValue)> = (self.data.iter())
            .chain(kernel.iter().map(|(f, v)| (f, v)))
            .collect();
        entries.sort_by_key(|e| std::cmp::Reverse(e.1.cpu_ns));
        let mut sample_msgs = Vec::with_capacity(entries.len());
        for (f, v) in entries {
            let mut ids = Vec::with_capacity(f.frames.len());
            for (i, level) in f.frames.iter().enumerate() {
                let addr = f.addresses.get(i).copied().unwrap_or(0);
                let key = (addr, level.as_slice());
                let next = locations.len() as u64 + 1;
                let id = *locations.entry(key).or_insert_with(|| {
                    let mut loc = Msg::default();
                    loc.uint(1, next);
                    if let Some(m) = self.modules.iter().position(|m| m.contains(addr)) {
                        let mid = match used_modules.iter().position(|&u| u == m) {
                            Some(p) => p,
                            None => {
                                used_modules.push(m);
                                used_modules.len() - 1
                            }
                        };
                        loc.uint(2, mid as u64 + 1);
                    }
                    loc.uint(3, addr);
                    for s in level {
                        let fkey = (s.name.as_str(), s.filename.as_deref());
                        let fnext = functions.len() as u64 + 1;
                        let fid = *functions.entry(fkey).or_insert_with(|| {
                            let mut fm = Msg::default();
                            let name = st.id(&s.name);
                            fm.uint(1, fnext)
                                .int(2, name)
                                .int(3, name)
                                .int(4, st.id(s.filename.as_deref().unwrap_or("")));
                            function_msgs.push(fm);
                            fnext
                        });
                        let mut line = Msg::default();
                        line.uint(1, fid).int(2, i64::from(s.lineno.unwrap_or(0)));
                        loc.msg(4, &line);
                    }
                    location_msgs.push(loc);
                    next
                });
                ids.push(id);
            }
            let mut sm = Msg::default();
            sm.packed(1, ids);
            sm.packed(2, [v.samples, v.cpu_ns]);
            let mut label = Msg::default();
            label.int(1, st.id("thread")).int(2, st.id(&f.thread_name));
            sm.msg(3, &label);
            let mut label = Msg::default();
            label.int(1, st.id("thread_id")).int(3, f.thread_id as i64);
            sm.msg(3, &label);
            if let Some(p) = &f.context_name {
                let mut label = Msg::default();
                label.int(1, st.id("perflens_path")).int(2, st.id(p));
                sm.msg(3, &label);
            }
            sample_msgs.push(sm);
        }
        for s in &sample_msgs {
            profile.msg(2, s);
        }
        for (i, &m) in used_modules.iter().enumerate() {
            let module = &self.modules[m];
            let build_id: String = module.build_id.iter().map(|b| format!("{b:02x}")).collect();
            let mut mm = Msg::default();
            mm.uint(1, i as u64 + 1)
                .uint(2, module.avma.start)
                .uint(3, module.avma.end)
                .uint(4, module.file_offset)
                .int(5, st.id(&module.name))
                .int(6, st.id(&build_id))
                .bool(7, true)
                .bool(8, true)
                .bool(9, true)
                .bool(10, true);
            profile.msg(3, &mm);
        }
        for l in &location_msgs {
            profile.msg(4, l);
        }
        for f in &function_msgs {
            profile.msg(5, f);
        }
        let time_nanos = self
            .timing
            .start_time
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        let mut period_type = Msg::default();
        period_type
            .int(1, st.id("cpu"))
            .int(2, st.id("nanoseconds"));
        let cpu = st.id("cpu");
        let comment = st.id(&format!(
            "perflens-sampler {} Hz, dropped samples: {}",
            self.timing.frequency,
            self.dropped_samples()
        ));
        st.write(&mut profile, 6);
        profile
            .int(9, time_nanos)
            .int(10, self.timing.duration.as_nanos() as i64)
            .msg(11, &period_type)
            .int(12, self.timing.period_ns as i64)
            .packed(13, [comment as u64])
            .int(14, cpu);
        profile.into_bytes()
    }

    /// The profile as gzipped `profile.proto` bytes (what `go tool pprof`
    /// reads).
    pub fn pprof(&self) -> Result<Vec<u8>, SamplerError> {
        let mut out = Vec::new();
        self.write_pprof(&mut out)?;
        Ok(out)
    }

    /// Writes the gzipped pprof profile.
    pub fn write_pprof(&self, w: impl Write) -> Result<(), SamplerError> {
        let mut gz = flate2::write::GzEncoder::new(w, flate2::Compression::default());
        gz.write_all(&self.pprof_proto())?;
        gz.finish()?;
        Ok(())
    }
}

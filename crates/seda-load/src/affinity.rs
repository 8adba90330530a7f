//! Pinning the generator's thread to one CPU (`--cpu N`), through the `core_affinity` crate,
//! which wraps `sched_setaffinity` (the workspace denies `unsafe_code`).

use crate::LoadError;

/// Pins the calling thread to CPU `cpu`.
pub fn pin_to_cpu(cpu: usize) -> Result<(), LoadError> {
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let Some(core) = cores.into_iter().find(|c| c.id == cpu) else {
        return Err(LoadError::BadConfig(format!(
            "CPU {cpu} is not available to this process (see `nproc` or `taskset -p $$`)"
        )));
    };
    if core_affinity::set_for_current(core) {
        Ok(())
    } else {
        Err(LoadError::BadConfig(format!("could not pin to CPU {cpu}")))
    }
}

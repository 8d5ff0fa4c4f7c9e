// Prints what nvml-wrapper reads from the NVML library named on the command line, one line per GPU
// and one per compute process, as `key=value` pairs separated by tabs.
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::Nvml;
use std::process::ExitCode;

fn main() -> ExitCode {
    let lib = match std::env::args_os().nth(1) {
        Some(lib) => lib,
        None => {
            eprintln!("usage: nvml-wrapper-client LIBRARY");
            return ExitCode::from(2);
        }
    };
    let nvml = match Nvml::builder().lib_path(&lib).init() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("nvml-wrapper-client: init failed: {e}");
            return ExitCode::from(1);
        }
    };
    match report(&nvml) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nvml-wrapper-client: {e}");
            ExitCode::from(1)
        }
    }
}

fn report(nvml: &Nvml) -> Result<(), nvml_wrapper::error::NvmlError> {
    println!("driver={}", nvml.sys_driver_version()?);
    for i in 0..nvml.device_count()? {
        let d = nvml.device_by_index(i)?;
        let mem = d.memory_info()?;
        let util = d.utilization_rates()?;
        println!(
            "gpu\tindex={}\tname={}\tuuid={}\tbus_id={}\tmemory_total_mib={}\tmemory_free_mib={}\tpower_mw={}\ttemperature_c={}\tutil_gpu={}\tutil_memory={}\tsm_mhz={}\tenergy_mj={}",
            d.index()?,
            d.name()?,
            d.uuid()?,
            d.pci_info()?.bus_id,
            mem.total / (1024 * 1024),
            mem.free / (1024 * 1024),
            d.power_usage()?,
            d.temperature(TemperatureSensor::Gpu)?,
            util.gpu,
            util.memory,
            d.clock_info(Clock::SM)?,
            d.total_energy_consumption()?,
        );
        for p in d.running_compute_processes()? {
            let used = match p.used_gpu_memory {
                UsedGpuMemory::Used(b) => (b / (1024 * 1024)).to_string(),
                UsedGpuMemory::Unavailable => "unavailable".to_string(),
            };
            println!("process\tgpu={}\tpid={}\tused_mib={}", i, p.pid, used);
        }
    }
    Ok(())
}

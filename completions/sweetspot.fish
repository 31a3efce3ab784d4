# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_sweetspot_global_optspecs
    string join \n db= sysfs-root= procfs-root= v/verbose q/quiet V/version h/help
end

function __fish_sweetspot_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_sweetspot_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_sweetspot_using_subcommand
    set -l cmd (__fish_sweetspot_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c sweetspot -n "__fish_sweetspot_needs_command" -l db -d 'The SQLite database [env: SWEETSPOT_DB]' -r -F
complete -c sweetspot -n "__fish_sweetspot_needs_command" -l sysfs-root -d 'Root of sysfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_needs_command" -l procfs-root -d 'Root of procfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_needs_command" -s v -l verbose -d 'More log output on stderr (-v, -vv)'
complete -c sweetspot -n "__fish_sweetspot_needs_command" -s q -l quiet -d 'Only errors on stderr; no progress bar'
complete -c sweetspot -n "__fish_sweetspot_needs_command" -s V -l version -d 'Print the version and the git revision it was built from'
complete -c sweetspot -n "__fish_sweetspot_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweetspot -n "__fish_sweetspot_needs_command" -f -a "devices" -d 'List whole disks with identity, schedulers, size and mounts'
complete -c sweetspot -n "__fish_sweetspot_needs_command" -f -a "knobs" -d 'List a device\'s knobs: domain, unit and current value'
complete -c sweetspot -n "__fish_sweetspot_needs_command" -f -a "set" -d 'Set knobs, journaled: `set sda scheduler=mq-deadline`'
complete -c sweetspot -n "__fish_sweetspot_needs_command" -f -a "restore" -d 'Put journaled knobs back as they were (all devices, or one)'
complete -c sweetspot -n "__fish_sweetspot_needs_command" -f -a "bench" -d 'Measure a device under contest\'s loads and print contest\'s table'
complete -c sweetspot -n "__fish_sweetspot_needs_command" -f -a "tune" -d 'Find a device\'s sweet spot for a policy and store it'
complete -c sweetspot -n "__fish_sweetspot_needs_command" -f -a "history" -d 'Show recent tunes and their verdicts (--tune ID: its trials)'
complete -c sweetspot -n "__fish_sweetspot_needs_command" -f -a "plot" -d 'Draw a stored tune as SVG: knob responses, trials, the check'
complete -c sweetspot -n "__fish_sweetspot_needs_command" -f -a "profile" -d 'Export sweet spots as boot profiles, or apply one'
complete -c sweetspot -n "__fish_sweetspot_needs_command" -f -a "verify" -d 'Compare a profile with the disks now; exit 1 on drift'
complete -c sweetspot -n "__fish_sweetspot_needs_command" -f -a "daemon" -d 'Keep devices at their sweet spot (hotplug, drift, retunes)'
complete -c sweetspot -n "__fish_sweetspot_needs_command" -f -a "status" -d 'Show enrolled devices: last tune, sweet spot, daemon\'s work'
complete -c sweetspot -n "__fish_sweetspot_needs_command" -f -a "completions" -d 'Print a shell\'s completion script (bash, zsh, fish, …)'
complete -c sweetspot -n "__fish_sweetspot_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand devices" -l db -d 'The SQLite database [env: SWEETSPOT_DB]' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand devices" -l sysfs-root -d 'Root of sysfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand devices" -l procfs-root -d 'Root of procfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand devices" -l json -d 'Print JSON instead of a table'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand devices" -s v -l verbose -d 'More log output on stderr (-v, -vv)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand devices" -s q -l quiet -d 'Only errors on stderr; no progress bar'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand devices" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand knobs" -l db -d 'The SQLite database [env: SWEETSPOT_DB]' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand knobs" -l sysfs-root -d 'Root of sysfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand knobs" -l procfs-root -d 'Root of procfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand knobs" -l json -d 'Print JSON instead of a table'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand knobs" -s v -l verbose -d 'More log output on stderr (-v, -vv)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand knobs" -s q -l quiet -d 'Only errors on stderr; no progress bar'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand knobs" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand set" -l db -d 'The SQLite database [env: SWEETSPOT_DB]' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand set" -l sysfs-root -d 'Root of sysfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand set" -l procfs-root -d 'Root of procfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand set" -s v -l verbose -d 'More log output on stderr (-v, -vv)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand set" -s q -l quiet -d 'Only errors on stderr; no progress bar'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand set" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand restore" -l db -d 'The SQLite database [env: SWEETSPOT_DB]' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand restore" -l sysfs-root -d 'Root of sysfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand restore" -l procfs-root -d 'Root of procfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand restore" -s v -l verbose -d 'More log output on stderr (-v, -vv)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand restore" -s q -l quiet -d 'Only errors on stderr; no progress bar'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand restore" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l device -d 'Measure this device (kernel name, e.g. sda)' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l dir -d 'Where on --device to run the job and loads' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l emulate -d 'Slow --scratch down: hdd-5400, sdcard, ...' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l sim -d 'A simulated device (a surface file)' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l seed -d 'Seed: the same seed repeats a --sim run' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l other-dir -d 'Where io_other writes (another filesystem)' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l job-scale -d 'Reference job scale, (0, 100]' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l job -d 'Run this shell command as the job instead' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l lead -d 'Load lead-in in seconds, 0–60' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l load-mib -d 'Load file and buffer size, MiB' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l loads -d 'Loads beside the job, comma-separated' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l runs -d 'Runs of each load' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l set -d 'Set a knob first (repeatable): fifo_batch=8' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l db -d 'The SQLite database [env: SWEETSPOT_DB]' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l sysfs-root -d 'Root of sysfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l procfs-root -d 'Root of procfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l scratch -d 'Measure a throwaway loop device (ext4)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l drop-caches -d 'Drop the system\'s page cache before each run'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l startup -d 'Time the start-up judge instead of the job'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l json -d 'Print JSON (fields in docs/DESIGN.md)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l csv -d 'Print CSV, one row per run'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -l host -d 'No device: host-wide knobs, user benchmark'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -s v -l verbose -d 'More log output on stderr (-v, -vv)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -s q -l quiet -d 'Only errors on stderr; no progress bar'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand bench" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l device -d 'Measure this device (kernel name, e.g. sda)' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l dir -d 'Where on --device to run the job and loads' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l emulate -d 'Slow --scratch down: hdd-5400, sdcard, ...' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l sim -d 'A simulated device (a surface file)' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l seed -d 'Seed: the same seed repeats a --sim run' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l other-dir -d 'Where io_other writes (another filesystem)' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l job-scale -d 'Reference job scale, (0, 100]' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l job -d 'Run this shell command as the job instead' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l lead -d 'Load lead-in in seconds, 0–60' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l load-mib -d 'Load file and buffer size, MiB' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l policy -d 'A policy name or TOML file' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l budget -d 'Full trials at most, 1–10000 (default: the policy\'s)' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l confirm -d 'Check a known sweet spot before searching' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l metric -d 'Tune --job\'s figure: regex:RE or json:/PTR' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l maximize -d 'With --metric: larger is better; its name' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l minimize -d 'With --metric: smaller is better; its name' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l unit -d 'With --metric: its unit (e.g. req/s, ms)' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l nice -d 'With --metric: nice level, -20..19' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l cpus -d 'With --metric: its CPUs, e.g. 0,2-3' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l db -d 'The SQLite database [env: SWEETSPOT_DB]' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l sysfs-root -d 'Root of sysfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l procfs-root -d 'Root of procfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l scratch -d 'Measure a throwaway loop device (ext4)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l host -d 'No device: host-wide knobs, user benchmark'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l drop-caches -d 'Drop the system\'s page cache before each run'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l resume -d 'Go on with this device\'s interrupted tune'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l apply -d 'Keep a significant sweet spot applied'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -l json -d 'Print the report as JSON'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -s v -l verbose -d 'More log output on stderr (-v, -vv)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -s q -l quiet -d 'Only errors on stderr; no progress bar'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand tune" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand history" -l tune -d 'Show this tune\'s trials and what they measured' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand history" -l limit -d 'Show the latest N tunes' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand history" -l db -d 'The SQLite database [env: SWEETSPOT_DB]' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand history" -l sysfs-root -d 'Root of sysfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand history" -l procfs-root -d 'Root of procfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand history" -l all -d 'Show every tune'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand history" -l json -d 'Print JSON: every stored tune, trial and sweet spot'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand history" -s v -l verbose -d 'More log output on stderr (-v, -vv)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand history" -s q -l quiet -d 'Only errors on stderr; no progress bar'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand history" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand plot" -s o -l out -d 'Where to write the SVG: this file, replaced if it exists (written whole, then renamed into place), or `-` for stdout. Default: `sweetspot-tune-N.svg` in the current directory, never replaced (give --out to replace it)' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand plot" -l db -d 'The SQLite database [env: SWEETSPOT_DB]' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand plot" -l sysfs-root -d 'Root of sysfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand plot" -l procfs-root -d 'Root of procfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand plot" -s v -l verbose -d 'More log output on stderr (-v, -vv)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand plot" -s q -l quiet -d 'Only errors on stderr; no progress bar'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand plot" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and not __fish_seen_subcommand_from export apply help" -l db -d 'The SQLite database [env: SWEETSPOT_DB]' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and not __fish_seen_subcommand_from export apply help" -l sysfs-root -d 'Root of sysfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and not __fish_seen_subcommand_from export apply help" -l procfs-root -d 'Root of procfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and not __fish_seen_subcommand_from export apply help" -s v -l verbose -d 'More log output on stderr (-v, -vv)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and not __fish_seen_subcommand_from export apply help" -s q -l quiet -d 'Only errors on stderr; no progress bar'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and not __fish_seen_subcommand_from export apply help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and not __fish_seen_subcommand_from export apply help" -f -a "export" -d 'Export sweet spots for boot: TOML, udev, sysctl.d, TuneD'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and not __fish_seen_subcommand_from export apply help" -f -a "apply" -d 'Apply a profile to the disks present now (journaled)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and not __fish_seen_subcommand_from export apply help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from export" -l format -d 'Output format' -r -f -a "toml\t'sweetspot\'s own versioned profile (for `profile apply` and `verify`)'
udev\t'udev rules (/etc/udev/rules.d/99-sweetspot.rules): no sweetspot binary at boot'
sysctl\t'A sysctl.d file (/etc/sysctl.d/99-sweetspot.conf) with the host-wide knobs only'
tuned\t'A TuneD profile: with --out DIR, DIR/tuned.conf; else tuned.conf on stdout. Refused for an entry TuneD cannot match by identity (see above)'"
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from export" -l device -d 'Only this device (kernel name or identity), or `host`' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from export" -l policy -d 'Only sweet spots of this policy' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from export" -l match -d 'Match a disk by identity, or all of its model' -r -f -a "identity\t'One disk: wwid, model+serial, bus path or loop backing file'
model\t'Every disk of the tuned disk\'s model (and firmware revision where sysfs has one): a sweet spot found on one board applies to every identical board'"
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from export" -l out -d 'Write here, not stdout (tuned: a directory)' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from export" -l db -d 'The SQLite database [env: SWEETSPOT_DB]' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from export" -l sysfs-root -d 'Root of sysfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from export" -l procfs-root -d 'Root of procfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from export" -s v -l verbose -d 'More log output on stderr (-v, -vv)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from export" -s q -l quiet -d 'Only errors on stderr; no progress bar'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from export" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from apply" -l device -d 'Only this present disk (kernel name)' -r
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from apply" -l db -d 'The SQLite database [env: SWEETSPOT_DB]' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from apply" -l sysfs-root -d 'Root of sysfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from apply" -l procfs-root -d 'Root of procfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from apply" -l dry-run -d 'Print what would be written, as shell commands, and change nothing'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from apply" -s v -l verbose -d 'More log output on stderr (-v, -vv)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from apply" -s q -l quiet -d 'Only errors on stderr; no progress bar'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from apply" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from help" -f -a "export" -d 'Export sweet spots for boot: TOML, udev, sysctl.d, TuneD'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from help" -f -a "apply" -d 'Apply a profile to the disks present now (journaled)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand profile; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand verify" -l db -d 'The SQLite database [env: SWEETSPOT_DB]' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand verify" -l sysfs-root -d 'Root of sysfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand verify" -l procfs-root -d 'Root of procfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand verify" -l json -d 'Print JSON (with a `version` field)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand verify" -s v -l verbose -d 'More log output on stderr (-v, -vv)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand verify" -s q -l quiet -d 'Only errors on stderr; no progress bar'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand verify" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand daemon" -l config -d 'The config (TOML)' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand daemon" -l db -d 'The SQLite database [env: SWEETSPOT_DB]' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand daemon" -l sysfs-root -d 'Root of sysfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand daemon" -l procfs-root -d 'Root of procfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand daemon" -s v -l verbose -d 'More log output on stderr (-v, -vv)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand daemon" -s q -l quiet -d 'Only errors on stderr; no progress bar'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand daemon" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand status" -l config -d 'The daemon\'s config (enrolled devices, retune interval)' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand status" -l format -d 'The output: text, json, or prometheus' -r -f -a "text\t'The human table'
json\t'JSON, as --json'
prometheus\t'Prometheus\' text exposition format'"
complete -c sweetspot -n "__fish_sweetspot_using_subcommand status" -l db -d 'The SQLite database [env: SWEETSPOT_DB]' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand status" -l sysfs-root -d 'Root of sysfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand status" -l procfs-root -d 'Root of procfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand status" -l json -d 'Print JSON (with a `version` field); the same as --format json'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand status" -s v -l verbose -d 'More log output on stderr (-v, -vv)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand status" -s q -l quiet -d 'Only errors on stderr; no progress bar'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand status" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand completions" -l db -d 'The SQLite database [env: SWEETSPOT_DB]' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand completions" -l sysfs-root -d 'Root of sysfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand completions" -l procfs-root -d 'Root of procfs' -r -F
complete -c sweetspot -n "__fish_sweetspot_using_subcommand completions" -s v -l verbose -d 'More log output on stderr (-v, -vv)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand completions" -s q -l quiet -d 'Only errors on stderr; no progress bar'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand help; and not __fish_seen_subcommand_from devices knobs set restore bench tune history plot profile verify daemon status completions help" -f -a "devices" -d 'List whole disks with identity, schedulers, size and mounts'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand help; and not __fish_seen_subcommand_from devices knobs set restore bench tune history plot profile verify daemon status completions help" -f -a "knobs" -d 'List a device\'s knobs: domain, unit and current value'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand help; and not __fish_seen_subcommand_from devices knobs set restore bench tune history plot profile verify daemon status completions help" -f -a "set" -d 'Set knobs, journaled: `set sda scheduler=mq-deadline`'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand help; and not __fish_seen_subcommand_from devices knobs set restore bench tune history plot profile verify daemon status completions help" -f -a "restore" -d 'Put journaled knobs back as they were (all devices, or one)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand help; and not __fish_seen_subcommand_from devices knobs set restore bench tune history plot profile verify daemon status completions help" -f -a "bench" -d 'Measure a device under contest\'s loads and print contest\'s table'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand help; and not __fish_seen_subcommand_from devices knobs set restore bench tune history plot profile verify daemon status completions help" -f -a "tune" -d 'Find a device\'s sweet spot for a policy and store it'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand help; and not __fish_seen_subcommand_from devices knobs set restore bench tune history plot profile verify daemon status completions help" -f -a "history" -d 'Show recent tunes and their verdicts (--tune ID: its trials)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand help; and not __fish_seen_subcommand_from devices knobs set restore bench tune history plot profile verify daemon status completions help" -f -a "plot" -d 'Draw a stored tune as SVG: knob responses, trials, the check'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand help; and not __fish_seen_subcommand_from devices knobs set restore bench tune history plot profile verify daemon status completions help" -f -a "profile" -d 'Export sweet spots as boot profiles, or apply one'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand help; and not __fish_seen_subcommand_from devices knobs set restore bench tune history plot profile verify daemon status completions help" -f -a "verify" -d 'Compare a profile with the disks now; exit 1 on drift'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand help; and not __fish_seen_subcommand_from devices knobs set restore bench tune history plot profile verify daemon status completions help" -f -a "daemon" -d 'Keep devices at their sweet spot (hotplug, drift, retunes)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand help; and not __fish_seen_subcommand_from devices knobs set restore bench tune history plot profile verify daemon status completions help" -f -a "status" -d 'Show enrolled devices: last tune, sweet spot, daemon\'s work'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand help; and not __fish_seen_subcommand_from devices knobs set restore bench tune history plot profile verify daemon status completions help" -f -a "completions" -d 'Print a shell\'s completion script (bash, zsh, fish, …)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand help; and not __fish_seen_subcommand_from devices knobs set restore bench tune history plot profile verify daemon status completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand help; and __fish_seen_subcommand_from profile" -f -a "export" -d 'Export sweet spots for boot: TOML, udev, sysctl.d, TuneD'
complete -c sweetspot -n "__fish_sweetspot_using_subcommand help; and __fish_seen_subcommand_from profile" -f -a "apply" -d 'Apply a profile to the disks present now (journaled)'

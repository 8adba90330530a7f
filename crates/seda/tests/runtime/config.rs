use seda::{
    BuildError, Config, ConfigError, Order, PoolSettings, Runtime, SizerConfig, Stage, handler,
};

const FILE: &str = r#"
[runtime]
tick_ms = 20

[domains.io]
threads = 2

[stages.a]
threads = 3
batch = 8
threshold = 50
order = "lifo"
rate_limit = { rate_per_s = 100.0, depth = 10.0 }

[stages.b]
domain = "io"
"#;

#[test]
fn file_settings_override_code_settings() {
    let config = Config::from_toml(FILE).unwrap();
    assert_eq!(config.stages["a"].order, Some(Order::Lifo));
    let rt = Runtime::builder().config(config).start().unwrap();
    let a = rt
        .stage(
            Stage::builder("a")
                .threshold(5)
                .batch(2)
                .handler(handler::each(|_: u64, _| {})),
        )
        .unwrap();
    let _b = rt
        .stage(Stage::builder("b").handler(handler::each(|_: u64, _| {})))
        .unwrap();
    assert_eq!(a.threshold(), Some(50));
    let stats = rt.stats();
    let a_snap = &stats.stages[0];
    assert_eq!(
        (a_snap.batch_size, a_snap.threads, a_snap.mode.as_ref()),
        (8, 3, "queued")
    );
    let b_snap = &stats.stages[1];
    assert_eq!(
        (b_snap.mode.as_ref(), b_snap.pool.as_deref(), b_snap.threads),
        ("domain", Some("io"), 2)
    );
    rt.shutdown();
}

#[test]
fn command_line_overrides() {
    let config = Config::from_toml(FILE).unwrap();
    let config = config
        .set("stages.a.threads=5")
        .unwrap()
        .set("stages.c.order=fifo")
        .unwrap();
    assert_eq!(config.stages["a"].threads, Some(5));
    assert_eq!(config.stages["c"].order, Some(Order::Fifo));
    assert_eq!(config.stages["a"].threshold, Some(50), "other keys kept");
}

#[test]
fn bad_configuration_gets_a_clear_error() {
    let unknown = Config::from_toml("[stages.a]\nthreds = 3\n").unwrap_err();
    assert!(unknown.to_string().contains("threds"), "{unknown}");
    let wrong_type = Config::from_toml("[stages.a]\nthreads = \"many\"\n").unwrap_err();
    assert!(wrong_type.to_string().contains("threads"), "{wrong_type}");
    let bad_override = Config::default().set("stages.a.threads").unwrap_err();
    assert!(
        bad_override.to_string().contains("key.path=value"),
        "{bad_override}"
    );
    let bad_value = Config::default().set("stages.a.threads=-1").unwrap_err();
    assert!(bad_value.to_string().contains("threads"), "{bad_value}");
    let missing = Config::from_file("/nonexistent/seda.toml").unwrap_err();
    assert!(
        missing.to_string().contains("/nonexistent/seda.toml"),
        "{missing}"
    );

    let rt = Runtime::builder()
        .config(
            Config::from_toml("[stages.x]\nrate_limit = { rate_per_s = -3.0, depth = 1.0 }\n")
                .unwrap(),
        )
        .start()
        .unwrap();
    let err = rt
        .stage(Stage::builder("x").handler(handler::each(|_: u64, _| {})))
        .unwrap_err();
    assert!(err.to_string().contains("rate_per_s"), "{err}");
    let err = rt
        .stage(
            Stage::builder("y")
                .domain("nope")
                .handler(handler::each(|_: u64, _| {})),
        )
        .unwrap_err();
    assert!(err.to_string().contains("[domains.nope]"), "{err}");
    let err = rt.stage(Stage::builder::<u64>("z")).unwrap_err();
    assert!(err.to_string().contains("no handler"), "{err}");
    rt.stage(Stage::builder("dup").handler(handler::each(|_: u64, _| {})))
        .unwrap();
    let err = rt
        .stage(Stage::builder("dup").handler(handler::each(|_: u64, _| {})))
        .unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    assert!(rt.sink::<String>("dup").is_err(), "wrong event type");
    assert!(rt.sink::<u64>("dup").is_ok());
    // A domain's bad settings name the domain in a field of their own, not in the text.
    let settings = PoolSettings {
        sizer: Some(SizerConfig::new("bogus")),
        ..Default::default()
    };
    let err = rt.domain("pool", settings).unwrap_err();
    match &err {
        BuildError::Config(ConfigError::Domain {
            domain, setting, ..
        }) => assert_eq!((domain.as_str(), *setting), ("pool", "sizer.kind")),
        other => panic!("expected ConfigError::Domain, got {other:?}"),
    }
    assert!(
        err.to_string().starts_with("domain `pool`: sizer.kind:"),
        "{err}"
    );
    rt.shutdown();
}

#[test]
fn an_adaptive_controller_is_chosen_in_the_file() {
    let config = Config::from_toml(
        "[stages.w.admission]\nkind = \"response_time\"\ntarget_s = 0.5\nnreq = 50\n",
    )
    .unwrap();
    let rt = Runtime::builder().config(config).start().unwrap();
    let sink = rt
        .stage(Stage::builder("w").handler(handler::each(|_: u64, _| {})))
        .unwrap();
    sink.enqueue(1).unwrap();
    let snap = rt.stats();
    let c = snap.stages[0]
        .controller
        .as_ref()
        .expect("controller attached");
    assert_eq!(c.name, "response_time");
    rt.shutdown();

    let bad = Config::from_toml("[stages.w.admission]\nkind = \"fifo\"\n").unwrap();
    let rt = Runtime::builder().config(bad).start().unwrap();
    let err = rt
        .stage(Stage::builder("w").handler(handler::each(|_: u64, _| {})))
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("stage `w`: admission") && text.contains("vegas"),
        "{text}"
    );
    rt.shutdown();
}

#[test]
fn a_configuration_written_as_toml_reads_back_the_same() {
    let mut config = Config::from_toml(FILE).unwrap();
    let extra = Config::from_toml(
        r#"
        [runtime.global]
        target_p90_ms = 100
        entry = "a"
        [stages."mail.search"]
        threshold = 1000000
        admission = { kind = "response_time", target_s = 0.5, nreq = 50.0 }
        terminate = { kind = "sert", lower_s = 0.1, upper_s = 2.0 }
        sizer = { kind = "self_tuning", law = "pi", period_ms = 500 }
        "#,
    )
    .unwrap();
    config.runtime.global = extra.runtime.global.clone();
    config.stages.extend(extra.stages);
    let text = config.to_toml().unwrap();
    assert_eq!(Config::from_toml(&text).unwrap(), config, "{text}");
    // A quoted stage name stays one key, not a nested table.
    assert!(text.contains("[stages.\"mail.search\"]"), "{text}");
}

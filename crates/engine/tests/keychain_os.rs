//! The real OS keychain: a key saved through Finishline lands in the Secret Service (GNOME
//! Keyring here), is read back by a fresh `Keys` as a new app start would, and is gone after
//! forgetting. `scripts/test` runs this inside `scripts/with-keyring`, which starts a private
//! D-Bus session and an unlocked keyring; it needs the `os-keychain-test` feature so that the
//! ordinary test run, which has no keyring, does not build it.

use std::sync::Arc;

use finishline_engine::config::secret::{KeyPlace, KeySource, KeychainStatus, Keys, OsKeychain};
use finishline_engine::provider::ApiKey;
use finishline_engine::ProviderSettings;

#[test]
fn a_key_saved_to_the_os_keychain_survives_a_restart_and_can_be_forgotten() {
    let service = format!("dev.finishline.test.{}", std::process::id());
    let provider = ProviderSettings { preset: Some("anthropic".into()), api_key_env: Some("FINISHLINE_TEST_UNSET_VAR".into()), ..Default::default() };
    let keys = Keys::new(Arc::new(OsKeychain::new(&service)));
    assert_eq!(keys.keychain_status(), KeychainStatus::Available, "scripts/with-keyring started a secret service");
    assert_eq!(keys.save(&provider, "sk-ant-real-keychain", KeyPlace::Keychain).unwrap(), KeySource::Keychain);

    let after_restart = Keys::new(Arc::new(OsKeychain::new(&service)));
    assert_eq!(after_restart.resolve(&provider), (ApiKey::new("sk-ant-real-keychain"), KeySource::Keychain), "the keychain, not memory, kept the key");

    after_restart.forget(&provider).unwrap();
    let again = Keys::new(Arc::new(OsKeychain::new(&service)));
    assert_eq!(again.resolve(&provider).1, KeySource::Missing { var: "FINISHLINE_TEST_UNSET_VAR".into() }, "forget removed it from the keychain");
}

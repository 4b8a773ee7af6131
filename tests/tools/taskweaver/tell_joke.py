from taskweaver.plugin import register_plugin, test_plugin

JOKES = {"en": "Why did the plugin cross the road? To load on the other side."}


@register_plugin
def tell_joke(lang: str):
    return JOKES.get(lang, JOKES["en"])


@test_plugin(name="test_tell_joke", description="an English joke comes back")
def test_call(api_call):
    result = api_call(lang="en")
    assert "plugin" in result


@test_plugin(name="test_joke_is_french", description="asks for French, expects French")
def test_french(api_call):
    result = api_call(lang="fr")
    assert result.startswith("Pourquoi"), result

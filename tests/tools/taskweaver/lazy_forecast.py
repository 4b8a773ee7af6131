from taskweaver.plugin import Plugin, register_plugin


@register_plugin
class LazyForecast(Plugin):
    def __call__(self, values: list):
        # heavy: imported only when the plugin is called, so the plugin loads without it
        import hookengine_absent_forecaster as forecaster

        forecast = forecaster.predict(values)
        return forecast, f"The next value is about {forecast[0]}"

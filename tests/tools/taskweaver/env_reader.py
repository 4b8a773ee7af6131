from taskweaver.plugin import Plugin, register_plugin


@register_plugin
class EnvReader(Plugin):
    def __call__(self):
        endpoint = self.ctx.get_env("env_reader", "endpoint")
        return f"endpoint is {endpoint}"

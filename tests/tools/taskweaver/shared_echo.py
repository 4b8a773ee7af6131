from taskweaver.plugin import Plugin, register_plugin


@register_plugin
class Echo(Plugin):
    def __call__(self, text, count=1, ratio=None, flag=None, items=None, mapping=None,
                 anything=None, nothing=None):
        echo = {
            "text": text, "count": count, "ratio": ratio, "flag": flag, "items": items,
            "mapping": mapping, "anything": anything, "nothing": nothing,
            "config": self.config, "plugin": self.name,
        }
        return echo, " ".join([text] * count)

from taskweaver.plugin import Plugin, register_plugin

VALUES = {
    "chart": ("chart.png", b"\x89PNG\r\n\x1a\nchart"),
    "image": ("photo.jpg", b"\xff\xd8\xff\xe0image"),
    "df": ("table.csv", "a,b\n1,2\n"),
    "file": ("notes.bin", b"\x00\x01\x02"),
    "txt": ("notes.txt", "plain text"),
    "svg": ("shape.svg", "<svg xmlns='http://www.w3.org/2000/svg'/>"),
    "html": ("page.html", "<p>hello</p>"),
}


@register_plugin
class Artifacts(Plugin):
    def __call__(self, kind: str):
        kinds = list(VALUES) if kind == "all" else [kind]
        ids = {}
        for name in kinds:
            file_name, val = VALUES[name]
            prefix = self.config["prefix"]
            ids[name] = self.ctx.add_artifact(
                name=f"{prefix}_{name}", file_name=file_name, type=name, val=val,
                desc=f"a {name} artifact",
            )
        ident, path = self.ctx.create_artifact_path(
            name="written", file_name="written.txt", type="txt", desc="written by the plugin"
        )
        with open(path, "w") as f:
            f.write(f"session={self.ctx.session_id} execution={self.ctx.execution_id}")
        ids["written"] = ident
        self.ctx.log("info", f"stored {len(ids)} artifacts")
        self.log("debug", "done")
        return ids, f"Stored {len(ids)} artifacts for {self.ctx.get_session_var('user', 'nobody')}"

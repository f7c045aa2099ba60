"""The storage core: a task set's splits written (`writer`) and read at episode start
(`taskset`), their stored rows (`rows`) and pass rates (`ratings`), integrity checks, and the
lazy views and adapters trainers read through (`views`, `torch_data`, `ray_data`). It never
imports the formats, the registry or the commands."""

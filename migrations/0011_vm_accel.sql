-- 0011: the accelerator of a vm sandbox (issue 15): 'kvm' or 'tcg', fixed
-- when it was created (the launcher's environment). NULL for containers of
-- an OCI runtime, and for rows from before 0011.
ALTER TABLE sandboxes ADD COLUMN vm_accel TEXT CHECK (vm_accel IS NULL OR vm_accel IN ('kvm', 'tcg'));
